/**
 * `PgProbe` and the Postgres warnings of `Diagnostics.check`: direct
 * connections read as direct, pgbouncer in transaction mode (127.0.0.1:6432)
 * as `pgbouncer-transaction-mode`, pgbouncer in session mode (127.0.0.1:6433)
 * as session (no warning); the server's keepalives are those of the socket
 * (a database with its own `tcp_keepalives_*` answers them) and are warned of
 * exactly when slower than the lease. `.ci/run` starts both poolers; without
 * them these tests fail saying so.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { PgClient, PgProbe } from "../../layers/pg/index.ts"
import { BatonConfig, Diagnostics, type StoreProbe } from "../../src/index.ts"
import { randomName, url, withAdmin } from "./db.ts"
import { bouncerUrls, requireBouncers } from "./bouncers.ts"
import { Conformance } from "../../src/testing/index.ts"

const probeOf = (target: string) => PgProbe.layer.pipe(Layer.provide(PgClient.layer({ url: target, maxConnections: 1 })))
const facts = (target: string) =>
  Effect.gen(function*() {
    const report = yield* Diagnostics.check({ config: BatonConfig.defaults })
    return report
  }).pipe(Effect.provide(probeOf(target)))
const pgIds = (report: Diagnostics.CheckReport) => report.warnings.map((w) => w.id).filter((id) => id.startsWith("pg"))

const database = randomName("baton_probe")
const withDatabase = (target: string, name: string) => {
  const u = new URL(target)
  u.pathname = `/${name}`
  return u.toString()
}

beforeAll(async () => {
  await withAdmin((sql) =>
    Effect.gen(function*() {
      yield* sql.unsafe(`CREATE DATABASE ${database}`)
      for (const [name, value] of [["tcp_keepalives_idle", 5], ["tcp_keepalives_interval", 2], ["tcp_keepalives_count", 3]] as const) {
        yield* sql.unsafe(`ALTER DATABASE ${database} SET ${name} = ${value}`)
      }
    })
  )
}, 30_000)
afterAll(() => withAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)))

describe("PgProbe, direct", () => {
  it.effect("direct connections; the socket's keepalives, warned of only when slower than the lease", () =>
    Effect.gen(function*() {
      const report = yield* facts(url)
      const stores = report.stores as StoreProbe.StoreFacts & { readonly _tag: "Postgres" }
      assert.strictEqual(stores._tag, "Postgres")
      assert.strictEqual(stores.pooling, "direct")
      assert.isAbove(stores.serverVersion, 100_000)
      assert.isNumber(stores.keepaliveSeconds)
      const slow = stores.keepaliveSeconds! * 1000 > BatonConfig.defaults.leaseMillis
      assert.deepStrictEqual(pgIds(report), slow ? ["pg-keepalives-exceed-lease"] : [])
      // A lease longer than the keepalives: nothing to warn of.
      const long = yield* Diagnostics.check({ config: Effect.runSync(BatonConfig.make({ lease: "24 hours" })) }).pipe(Effect.provide(probeOf(url)))
      assert.deepStrictEqual(pgIds(long), stores.keepaliveSeconds! > 86_400 ? ["pg-keepalives-exceed-lease"] : [])
    }))

  it.effect("a server set to notice a vanished client in 11 s: no warning at a 30 s lease, one at a 10 s lease", () =>
    Effect.gen(function*() {
      const target = withDatabase(url, database)
      const report = yield* facts(target)
      assert.deepInclude(report.stores, { _tag: "Postgres", pooling: "direct", keepaliveSeconds: 5 + 2 * 3 })
      assert.deepStrictEqual(pgIds(report), [])
      const short = yield* Diagnostics.check({ config: Effect.runSync(BatonConfig.make({ lease: "10 seconds" })) }).pipe(Effect.provide(probeOf(target)))
      assert.deepStrictEqual(pgIds(short), ["pg-keepalives-exceed-lease"])
      assert.match(short.warnings.find((w) => w.id === "pg-keepalives-exceed-lease")!.message, /after 11 s/)
    }))
})

describe("PgProbe, through pgbouncer", () => {
  beforeAll(requireBouncers, 20_000)

  it.effect("transaction mode: pgbouncer-transaction-mode", () =>
    Effect.gen(function*() {
      const report = yield* facts(bouncerUrls.transaction)
      assert.deepInclude(report.stores, { _tag: "Postgres", pooling: "transaction" })
      assert.isTrue(report.warnings.some((w) => w.id === "pgbouncer-transaction-mode"))
      assert.match(report.warnings.find((w) => w.id === "pgbouncer-transaction-mode")!.message, /lease expiry.*session-mode pool/)
    }))

  it.effect("session mode: a pooler, no warning about it", () =>
    Effect.gen(function*() {
      const report = yield* facts(bouncerUrls.session)
      assert.deepInclude(report.stores, { _tag: "Postgres", pooling: "session" })
      assert.isFalse(report.warnings.some((w) => w.id === "pgbouncer-transaction-mode"))
    }))
})

Conformance.storeProbeSuite({ name: "postgres, two pools", layer: probeOf(url), second: probeOf(url) })
