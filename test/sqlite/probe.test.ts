/** The StoreProbe conformance suite on the SQLite probe: two probes of one real file (the machine's mount table). */
import { SqliteProbe } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("probe")
Conformance.storeProbeSuite({ name: "sqlite", layer: SqliteProbe.layer({ path }), second: SqliteProbe.layer({ path }) })
