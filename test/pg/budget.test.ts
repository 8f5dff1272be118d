/**
 * Spend budgets across three instances on Postgres: three pools on one schema.
 */
import { describe } from "@effect/vitest"
import { Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { budgetRaces } from "../runtime/limits/budgetRace.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("budget")
const pg = () => Layer.merge(PgStores.layerLedgerStore({ url, schema, maxConnections: 3 }), PgStores.layerRateLimitStore({ url, schema, maxConnections: 2 }))

describe("spend budgets on Postgres, three pools", () => budgetRaces("postgres", [pg(), pg(), pg()]))
