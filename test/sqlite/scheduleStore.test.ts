/**
 * The ScheduleStore conformance suite on SQLite files: two connections on one file, and one.
 */
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const shared = tempDb("schedules-two")

Conformance.scheduleStoreSuite({
  name: "sqlite, two connections on one file",
  layer: SqliteStores.layer({ path: shared, busyTimeout: 0 }),
  second: SqliteStores.layer({ path: shared, busyTimeout: 0 })
})
Conformance.scheduleStoreSuite({ name: "sqlite, the store alone", layer: SqliteStores.layerScheduleStore({ path: tempDb("schedules-one") }) })
