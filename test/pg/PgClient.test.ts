/**
 * The Postgres client Layer fails at build with a typed error that names what
 * to fix — quickly, never a hang: a missing, empty or malformed URL, an
 * unreachable server, a server that never answers, a database that does not
 * exist.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Net from "node:net"
import { PgClient } from "../../layers/pg/index.ts"
import { cuttingProxy } from "./cuttingProxy.ts"
import { url } from "./db.ts"

/** Builds the client Layer, which must fail: answers its typed error and how long it took. */
const buildFailure = (options: PgClient.PgClientOptions, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const started = Date.now()
    const error = yield* Layer.build(PgClient.layer(options)).pipe(
      Effect.scoped,
      Effect.flip,
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
    )
    return { error: error as { readonly _tag: string; readonly message: string; readonly field?: string }, millis: Date.now() - started }
  })

/** A TCP server that accepts connections and never says a word. */
const silentServer = Effect.acquireRelease(
  Effect.callback<Net.Server>((resume) => {
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((s) => void sockets.add(s))
    server.on("close", () => sockets.forEach((s) => s.destroy()))
    ;(server as any).sockets = sockets
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.sync(() => {
    ;((server as any).sockets as Set<Net.Socket>).forEach((s) => s.destroy())
    server.close()
  })
)

describe("PgClient.layer", () => {
  it.live("BATON_PG_URL unset → BatonConfigError naming BATON_PG_URL", () =>
    Effect.gen(function*() {
      const { error } = yield* buildFailure({})
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "BATON_PG_URL")
      assert.include(error.message, "is not set")
    }))

  it.live("BATON_PG_URL empty → BatonConfigError naming BATON_PG_URL", () =>
    Effect.gen(function*() {
      const { error } = yield* buildFailure({}, { BATON_PG_URL: "  " })
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "BATON_PG_URL")
      assert.include(error.message, "empty")
    }))

  it.live("a malformed URL → BatonConfigError that does not echo it (it may hold a password)", () =>
    Effect.gen(function*() {
      const { error } = yield* buildFailure({}, { BATON_PG_URL: "postgres://user:s3cret@host:port/db" })
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "BATON_PG_URL")
      assert.notInclude(error.message, "s3cret")
      const other = yield* buildFailure({ url: "mysql://localhost/db" })
      assert.strictEqual(other.error._tag, "BatonConfigError")
      assert.strictEqual(other.error.field, "url")
      assert.include(other.error.message, "postgres://")
      const port = yield* buildFailure({ url: "postgres://localhost:70000/db" })
      assert.strictEqual(port.error._tag, "BatonConfigError")
      const encoding = yield* buildFailure({ url: "postgres://localhost/%zz" })
      assert.strictEqual(encoding.error._tag, "BatonConfigError")
    }))

  it.live("bad options → BatonConfigError naming the option", () =>
    Effect.gen(function*() {
      for (const [options, field] of [
        [{ url, schema: "no spaces allowed" }, "schema"],
        [{ url, maxConnections: 0 }, "maxConnections"],
        [{ url, connectTimeout: "0 millis" }, "connectTimeout"]
      ] as const) {
        const { error } = yield* buildFailure(options)
        assert.strictEqual(error._tag, "BatonConfigError")
        assert.strictEqual(error.field, field)
      }
    }))

  it.live("a system schema, NaN or Infinity → BatonConfigError naming the field and saying what the value was", () =>
    Effect.gen(function*() {
      for (const [options, field, reason] of [
        [{ url, schema: "pg_catalog" }, "schema", /schema of Postgres itself/],
        [{ url, schema: "information_schema" }, "schema", /schema of Postgres itself/],
        [{ url, schema: "pg_toast" }, "schema", /schema of Postgres itself/],
        [{ url, schema: "pg_mine" }, "schema", /schema of Postgres itself/],
        [{ url, maxConnections: NaN }, "maxConnections", /is NaN/],
        [{ url, maxConnections: Infinity }, "maxConnections", /is Infinity/],
        [{ url, connectTimeout: NaN }, "connectTimeout", /is NaN/],
        [{ url, connectTimeout: Infinity }, "connectTimeout", /is Infinity/]
      ] as const) {
        const { error } = yield* buildFailure(options)
        assert.strictEqual(error._tag, "BatonConfigError")
        assert.strictEqual(error.field, field)
        assert.match(error.message, reason)
        assert.notInclude(error.message, "null")
      }
    }))

  it.live("a server that refuses connections → StoreError naming host and setting, at once", () =>
    Effect.gen(function*() {
      const { error, millis } = yield* buildFailure({}, { BATON_PG_URL: "postgres://postgres@127.0.0.1:1/test" })
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "127.0.0.1:1/test")
      assert.include(error.message, "BATON_PG_URL")
      assert.isBelow(millis, 3000)
    }))

  it.live("a connection the server closes during the build check (a restart, a terminated backend) → the check retries on a new connection and the Layer builds", () =>
    Effect.gen(function*() {
      const proxy = yield* cuttingProxy({ at: "SELECT 1", cuts: 2 })
      const answer = yield* Layer.build(PgClient.layer({ url: proxy.url, maxConnections: 1 })).pipe(
        Effect.flatMap((ctx) => Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT 41 + 1 AS n`), ctx))
      )
      assert.strictEqual(proxy.cut(), 2, "the proxy cut the first two checks")
      assert.strictEqual(answer[0]!.n, 42)
    }).pipe(Effect.scoped))

  it.live("a server that never answers → StoreError after the connect timeout, not a hang", () =>
    Effect.gen(function*() {
      const server = yield* silentServer
      const port = (server.address() as Net.AddressInfo).port
      const { error, millis } = yield* buildFailure({ url: `postgres://postgres@127.0.0.1:${port}/test`, connectTimeout: "300 millis" })
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, `127.0.0.1:${port}/test`)
      assert.isBelow(millis, 2500)
    }).pipe(Effect.scoped))

  it.live("a database that does not exist → BatonConfigError", () =>
    Effect.gen(function*() {
      const { error } = yield* buildFailure({ url: url.replace(/\/[^/]*$/, "/baton_no_such_database") })
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.include(error.message, "does not exist")
    }))

  it.live("a role that does not exist → BatonConfigError naming the setting", () =>
    Effect.gen(function*() {
      const { error } = yield* buildFailure({ url: url.replace(/\/\/[^@/]*@/, "//baton_no_such_role@") })
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "url")
      assert.include(error.message, "baton_no_such_role")
    }))

  it.live("a reachable server builds, and answers a query", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(PgClient.layer({ url, maxConnections: 1 }))
      assert.isDefined(context)
    }).pipe(Effect.scoped))
})
