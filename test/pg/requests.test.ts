/**
 * Request key races on Postgres: two instances, each with its own pool on
 * one schema (see test/runtime/calls/RequestsRaces.ts).
 */
import { describe, it } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { oneStartPerKey } from "../runtime/calls/RequestsRaces.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("requests")
const stores = () => PgStores.layer({ url, schema, maxConnections: 4 })

describe("request keys on Postgres, two pools", () => {
  it.live("8 concurrent start/execute calls of one request key across two instances: one execution, its step once; 8 racing keyed resumes: one continuation", () =>
    oneStartPerKey(stores(), stores(), 8), { timeout: 60_000 })
})
