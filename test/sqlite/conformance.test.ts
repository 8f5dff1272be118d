/**
 * Every conformance suite against the SQLite Layers: once as two instances
 * (two connections on one file, busy timeout 0 — one process), once as a
 * single instance of the bundle; and the stores that also come alone, alone.
 */
import { Conformance } from "../../src/testing/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { tempDb } from "./tmp.ts"

const shared = tempDb("conformance-two")
const single = tempDb("conformance-one")

const setups = [
  {
    name: "sqlite, two connections on one file",
    layer: SqliteStores.layer({ path: shared, busyTimeout: 0 }),
    second: SqliteStores.layer({ path: shared, busyTimeout: 0 })
  },
  { name: "sqlite, one connection", layer: SqliteStores.layer({ path: single }) }
]

for (const setup of setups) Conformance.everyStoreSuite(setup)

Conformance.scheduleStoreSuite({ name: "sqlite, the store alone", layer: SqliteStores.layerScheduleStore({ path: tempDb("schedules-one") }) })
Conformance.concurrencyKeyStoreSuite({
  name: "sqlite, the store alone",
  layer: SqliteStores.layerConcurrencyKeyStore({ path: tempDb("concurrency-keys-one") })
})
Conformance.debounceStoreSuite({ name: "sqlite, the store alone", layer: SqliteStores.layerDebounceStore({ path: tempDb("debounces-one") }) })
