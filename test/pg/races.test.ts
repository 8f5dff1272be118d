/**
 * The start races on Postgres: two instances, each with its own pool on one
 * schema, NOTIFY wake-ups on (see test/runtime/races.ts).
 */
import { describe, it } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { bornLeased, oneRootPerThread } from "../runtime/races.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("races")
const stores = () => PgStores.layer({ url, schema, maxConnections: 4 })

describe("start races on Postgres, two pools", () => {
  it.live("200 roots start on one instance while the other sweeps as often as it may: no defect, every one finishes", () =>
    bornLeased(stores(), stores(), 200), { timeout: 120_000 })

  it.live("8 concurrent start/execute calls on one idle thread across two instances: exactly one starts", () =>
    oneRootPerThread(stores(), stores(), 8), { timeout: 60_000 })
})
