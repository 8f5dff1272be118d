/**
 * The EventStore conformance suite against the SQLite Layers: two
 * connections on one file (busy timeout 0, one process), and one connection.
 */
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const shared = tempDb("events-two")

Conformance.eventStoreSuite({
  name: "sqlite, two connections on one file",
  layer: SqliteStores.layer({ path: shared, busyTimeout: 0 }),
  second: SqliteStores.layer({ path: shared, busyTimeout: 0 })
})
Conformance.eventStoreSuite({ name: "sqlite, one connection", layer: SqliteStores.layer({ path: tempDb("events-one") }) })
