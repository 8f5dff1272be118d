/**
 * Every conformance suite against the Postgres Layers through pgbouncer, in
 * transaction mode (127.0.0.1:6432) and in session mode (127.0.0.1:6433), as
 * two instances each: two `PgStores` bundles, each with its own pool, on one
 * table prefix (a schema cannot be set through the pooler: see
 * test/pg/pooler.test.ts). `.ci/run` starts both poolers; without them this
 * file fails saying how to start them.
 */
import { beforeAll } from "vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { bouncerUrls, requireBouncers, testPrefix } from "./bouncers.ts"

beforeAll(requireBouncers, 20_000)

for (const mode of ["transaction", "session"] as const) {
  const tablePrefix = testPrefix(mode.slice(0, 3))
  // Wake-ups on, as an app runs them: in transaction mode they fall back to polling.
  const instance = () => PgStores.layer({ url: bouncerUrls[mode], tablePrefix, maxConnections: 4 })
  const setup = { name: `postgres through pgbouncer in ${mode} mode, two pools`, layer: instance(), second: instance() }
  Conformance.leaseStoreSuite(setup)
  Conformance.recordStoreSuite(setup)
  Conformance.pauseStoreSuite(setup)
  Conformance.treeStoreSuite(setup)
  Conformance.ledgerStoreSuite(setup)
  Conformance.rateLimitStoreSuite(setup)
  Conformance.childQueueStoreSuite(setup)
  Conformance.executionHistoryStoreSuite(setup)
  Conformance.requestStoreSuite(setup)
  Conformance.checkpointStoreSuite(setup)
  Conformance.limiterStoresSuite(setup)
}
