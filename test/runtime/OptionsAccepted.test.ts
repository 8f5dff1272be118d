/**
 * From outside: every documented option of the store, limiter and runtime
 * Layers, with valid values, must build — the unknown-field check must not
 * refuse what the README tells users to pass. And a bad argument that is a
 * valid `Duration.Input` type (a negative bigint: nanoseconds) must be a
 * typed error, never a TypeError.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, BatonConfig } from "../../src/index.ts"
import { Harness } from "../../src/testing/index.ts"
import { MemoryLimiters, MemoryStores } from "../../layers/memory/index.ts"
import { PgClient, PgLimiters, PgStores } from "../../layers/pg/index.ts"
import { SqliteClient, SqliteLimiters, SqliteStores } from "../../layers/sqlite/index.ts"
import { oneStep } from "./fixtures.ts"

const pgUrl = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const tmpFile = () => Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-break-")), "s.sqlite")

/** Builds `layer`, answering "built" or the failure's tag, field and message. */
const tryBuild = <A, E>(layer: Layer.Layer<A, E>) =>
  Layer.build(layer).pipe(
    Effect.scoped,
    Effect.as("built"),
    Effect.catch((e: any) => Effect.succeed(`${e?._tag} ${e?.field ?? ""}: ${e?.message}`)),
    Effect.catchDefect((d) => Effect.succeed(`defect: ${String(d)}`))
  )

describe("documented options are accepted", () => {
  it.effect("SqliteStores.layer with every documented option (wakeups as an object)", () =>
    Effect.gen(function*() {
      const out = yield* tryBuild(SqliteStores.layer({
        path: tmpFile(), busyTimeout: "5 seconds", synchronous: "FULL", busyRetries: 3, statementCacheSize: 50,
        tablePrefix: "b_", probeLease: "10 seconds", idleTimeToLive: "1 hour", wakeups: { pollInterval: "50 millis", keep: 500 }
      }))
      assert.strictEqual(out, "built")
    }))

  it.effect("SqliteStores.layerOnClient given the same options object as the SqliteClient under it", () =>
    Effect.gen(function*() {
      const options = { path: tmpFile(), tablePrefix: "b_" }
      const out = yield* tryBuild(SqliteStores.layerOnClient(options).pipe(
        Layer.provide(SqliteClient.layer(options)),
        Layer.provide(MemoryStores.layer) // only for its IdGenerator
      ))
      assert.strictEqual(out, "built")
    }))

  it.effect("SqliteLimiters.layer and MemoryLimiters.layer with every option", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* tryBuild(SqliteLimiters.layer({ path: tmpFile(), busyTimeout: 1000, synchronous: "NORMAL", busyRetries: 0, statementCacheSize: 10, tablePrefix: "l_", probeLease: "5 seconds", idleTimeToLive: "1 minute" })), "built")
      assert.strictEqual(yield* tryBuild(MemoryLimiters.layer({ idleTimeToLive: "1 hour" })), "built")
      assert.strictEqual(yield* tryBuild(MemoryLimiters.layer(undefined)), "built")
      assert.strictEqual(yield* tryBuild(MemoryLimiters.layer({})), "built")
    }))

  it.effect("SqliteStores.layerConfig from a ConfigProvider with every BATON_SQLITE_* key", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromUnknown({ BATON_SQLITE_PATH: tmpFile(), BATON_SQLITE_BUSY_TIMEOUT: "2 seconds", BATON_SQLITE_SYNCHRONOUS: "FULL", BATON_TABLE_PREFIX: "c_" })
      const out = yield* tryBuild(SqliteStores.layerConfig().pipe(Layer.provide(ConfigProvider.layer(provider))))
      assert.strictEqual(out, "built")
    }))

  it.effect("PgStores.layer with every documented option", () =>
    Effect.gen(function*() {
      const out = yield* tryBuild(PgStores.layer({
        url: pgUrl, schema: "break_opts", tablePrefix: "baton_", maxConnections: 3, connectTimeout: "3 seconds",
        applicationName: "break", wakeups: false, probeLease: "10 seconds", idleTimeToLive: "1 hour"
      }))
      assert.strictEqual(out, "built")
    }))

  it.effect("PgLimiters.layer with every option", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* tryBuild(PgLimiters.layer({ url: pgUrl, schema: "break_opts", tablePrefix: "baton_", maxConnections: 2, connectTimeout: "3 seconds", applicationName: "break", probeLease: "10 seconds", idleTimeToLive: "1 hour" })), "built")
    }))

  // README: "to share a pool with your own queries, `PgStores.layerOnClient(options)` over `PgClient.layer(options)`".
  it.effect("PgStores.layerOnClient(options) over PgClient.layer(options), one options object as the README writes it", () =>
    Effect.gen(function*() {
      const options = { url: pgUrl, schema: "break_opts", tablePrefix: "baton_" }
      const out = yield* tryBuild(PgStores.layerOnClient(options).pipe(
        Layer.provide(PgClient.layer(options)),
        Layer.provide(MemoryStores.layer)
      ))
      assert.strictEqual(out, "built")
    }))

  it.effect("Baton.layer with every option the README lists", () =>
    Effect.gen(function*() {
      const out = yield* tryBuild(Baton.layer({
        workflows: [oneStep], instanceId: "i-1", lease: "30 seconds", renewEvery: "10 seconds", sweepInterval: "30 seconds",
        pauseRetention: "24 hours", waitPoll: "1 second", sweepPageSize: 100, maxConcurrentSteps: 4, maxRecoveriesPerLook: 100,
        maxRecoveryAttempts: 5, recoveryBackoff: "1 second", recoveryBackoffMax: "5 minutes", requestRetention: "24 hours",
        tenantQuota: 5, onOverQuota: "fail", providers: [], undoAttempts: 5, undoBackoff: "1 second", undoBackoffMax: "30 seconds",
        maxClaimedChildren: 0, maxInlineChildren: 16, historyRetention: "30 days"
      }).pipe(Layer.provide(Layer.fresh(MemoryStores.layer))))
      assert.strictEqual(out, "built")
      assert.strictEqual(yield* tryBuild(BatonConfig.layer({ lease: "1 minute" })), "built")
    }))
})

describe("a negative bigint duration (nanoseconds, a valid Duration.Input type) is a typed error", () => {
  it.effect("Harness.advance(-5n)", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [oneStep] } })
      const out = yield* h.advance(-5n).pipe(
        Effect.as("advanced"),
        Effect.catch((e: any) => Effect.succeed(`${e._tag} ${e.field}`)),
        Effect.catchDefect((d) => Effect.succeed(`defect: ${String(d)}`))
      )
      assert.strictEqual(out, "InvalidInputError duration")
    }).pipe(Effect.scoped, Effect.provide(Layer.fresh(MemoryStores.layer))))

  it.effect("Baton.await(handle, { timeout: -5n })", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [oneStep] } })
      const fiber = yield* h.run(0, (b) =>
        b.await("exec_none", { timeout: -5n }).pipe(
          Effect.as("answered"),
          Effect.catch((e: any) => Effect.succeed(`${e._tag} ${e.field}`)),
          Effect.catchDefect((d) => Effect.succeed(`defect: ${String(d)}`))
        ))
      yield* h.advance("1 second")
      assert.strictEqual(yield* Fiber.join(fiber), "InvalidInputError timeout")
    }).pipe(Effect.scoped, Effect.provide(Layer.fresh(MemoryStores.layer))))
})

describe("baton/http options", () => {
  const authorize = () => Effect.succeed({ tenantId: "t" })
  const serve = (options: any) =>
    BatonHttp.layerServer(options).pipe(Layer.provide(Baton.layer({ workflows: [] })), Layer.provide(Layer.fresh(MemoryStores.layer)))

  it.effect("layerServer with every documented option builds", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* tryBuild(serve({ port: 0, host: "127.0.0.1", prefix: "/api", workflows: [], authorize })), "built")
    }))

  // Like every other Layer of the package (README: "an option that does not exist … fails the Layer with BatonConfigError naming the field").
  it.effect("layerServer with a misspelt option (`prefx`) fails naming it, instead of serving at the root", () =>
    Effect.gen(function*() {
      const out = yield* tryBuild(serve({ port: 0, prefx: "/api", workflows: [], authorize }))
      assert.match(out, /^BatonConfigError prefx/)
    }))
})
