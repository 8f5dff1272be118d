/**
 * The DebounceStore conformance suite on SQLite files: two connections on one file, and one.
 */
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const shared = tempDb("debounces-two")

Conformance.debounceStoreSuite({
  name: "sqlite, two connections on one file",
  layer: SqliteStores.layer({ path: shared, busyTimeout: 0 }),
  second: SqliteStores.layer({ path: shared, busyTimeout: 0 })
})
Conformance.debounceStoreSuite({ name: "sqlite, the store alone", layer: SqliteStores.layerDebounceStore({ path: tempDb("debounces-one") }) })
