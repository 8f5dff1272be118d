/**
 * Multi-host URLs (`postgres://h1:p1,h2:p2/db?target_session_attrs=…`): a
 * host that does not answer is passed over, a host that cannot take the
 * sessions asked for is passed over, nothing fitting is a retryable
 * connection failure, and a URL that cannot work is a `BatonConfigError`
 * naming the setting. The failover itself is `npm run test:failover`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "../../layers/pg/index.ts"
import * as MultiHost from "../../layers/pg/internal/multiHost.ts"

const build = (url: string) => Layer.build(PgClient.layer({ url, connectTimeout: "2 seconds", maxConnections: 2 })).pipe(Effect.scoped)
const query = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ port: number }>`SELECT inet_server_port() AS port`
  }).pipe(Effect.provide(PgClient.layer({ url, connectTimeout: "2 seconds", maxConnections: 2 })))

describe("multi-host URLs", () => {
  it("are taken apart as libpq reads them", () => {
    const parsed = MultiHost.parse("postgres://u:p@127.0.0.1:5440,[::1]:5441,127.0.0.1/db?target_session_attrs=read-write&application_name=x")
    assert.deepInclude(parsed as object, {
      hosts: [{ host: "127.0.0.1", port: 5440 }, { host: "::1", port: 5441 }, { host: "127.0.0.1", port: 5432 }],
      attrs: "read-write",
      singleUrl: "postgres://u:p@127.0.0.1:5440/db?target_session_attrs=read-write&application_name=x"
    })
    assert.isUndefined(MultiHost.parse("postgres://127.0.0.1:5432/db"))
    assert.match(MultiHost.parse("postgres://a:1,b:99999/db") as string, /port 99999/)
    assert.match(MultiHost.parse("postgres://a,b/db?target_session_attrs=standby") as string, /standby: baton follows any, read-write and primary/)
  })

  it.effect("a host that does not answer is passed over: the next one serves", () =>
    Effect.gen(function*() {
      const rows = yield* query("postgres://postgres@127.0.0.1:1,127.0.0.1:5432/test?target_session_attrs=read-write")
      assert.strictEqual(Number(rows[0]!.port), 5432)
    }))

  it.effect("no host takes the sessions asked for: a retryable StoreError of kind Connection naming the hosts", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(build("postgres://postgres@127.0.0.1:1,127.0.0.1:2/test?target_session_attrs=read-write"))
      assert.strictEqual(error._tag, "StoreError")
      if (error._tag !== "StoreError") return
      assert.strictEqual(error.kind, "Connection")
      assert.isTrue(error.isRetryable)
      assert.include(error.message, "127.0.0.1:1,127.0.0.1:2")
    }))

  it.effect("target_session_attrs baton does not follow is a BatonConfigError on the url", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(build("postgres://postgres@127.0.0.1:5432,127.0.0.1:5433/test?target_session_attrs=prefer-standby"))
      assert.deepInclude(error, { _tag: "BatonConfigError", field: "url" })
    }))
})
