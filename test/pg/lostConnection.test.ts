/**
 * A connection lost in the middle of a store's transaction on Postgres (a
 * server restart, a failover, `pg_terminate_backend`) is a transient
 * `StoreError` of kind Connection — the server rolled the transaction back —
 * never a defect, although the client's ROLLBACK on the dead connection fails
 * too. A proxy on 127.0.0.1 cuts the connection as the transaction's statement
 * goes out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { cuttingProxy } from "./cuttingProxy.ts"
import { testSchemas, url } from "./db.ts"

const freshSchema = testSchemas("lostconn")

/** Runs `use` on stores reached through a proxy that cuts the first connection sending `at`. */
const throughCut = <A, E>(at: string, use: Effect.Effect<A, E, LedgerStore | RecordStore>) =>
  Effect.gen(function*() {
    const schema = freshSchema()
    yield* Layer.build(PgStores.layer({ url, schema, wakeups: false, maxConnections: 1 })) // migrated before the proxy
    const proxy = yield* cuttingProxy({ at, cuts: 1 })
    const context = yield* Layer.build(PgStores.layer({ url: proxy.url, schema, wakeups: false, maxConnections: 1 }))
    const exit = yield* Effect.exit(Effect.provide(use, context))
    assert.strictEqual(proxy.cut(), 1, "the proxy cut the connection mid-transaction")
    return exit
  }).pipe(Effect.scoped)

const assertLostConnection = (exit: Exit.Exit<unknown, { readonly _tag: string }>) => {
  assert.isTrue(Exit.isFailure(exit))
  if (Exit.isSuccess(exit)) return
  assert.isFalse(Cause.hasDies(exit.cause), `no defect: ${Cause.pretty(exit.cause)}`)
  const error = Cause.findErrorOption(exit.cause)
  assert.strictEqual(error._tag, "Some")
  const failure = (error as { value: { _tag: string; kind?: string; transient?: boolean } }).value
  assert.strictEqual(failure._tag, "StoreError")
  assert.strictEqual(failure.kind, "Connection")
  assert.isTrue(failure.transient)
}

describe("a connection lost inside a transaction on Postgres", () => {
  it.live("LedgerStore.add → transient StoreError (Connection), not a defect", () =>
    Effect.gen(function*() {
      const exit = yield* throughCut(
        "cur.total + excluded.total",
        Effect.flatMap(LedgerStore, (ledger) => ledger.add({ tenantId: "default", scope: "tenant", scopeId: "t", day: "2026-12-01" }, 5, 10))
      )
      assertLostConnection(exit)
    }))

  it.live("RecordStore.setStatusFenced → transient StoreError (Connection), not a defect", () =>
    Effect.gen(function*() {
      const lease = { tenantId: "default", rootExecutionId: "root-1", holder: "a", epoch: 1, expiresAt: Number.MAX_SAFE_INTEGER }
      const exit = yield* throughCut(
        " FOR UPDATE",
        Effect.flatMap(RecordStore, (records) =>
          records.setStatusFenced({ tenantId: "default", executionId: "root-1", from: "Running", to: "Finished", now: 1, lease }))
      )
      assertLostConnection(exit)
    }))

  it.live("RecordStore.setStatusFenced refused by the lease, then its ROLLBACK cut: the refusal (LeaseLostError) is the answer, not the lost connection", () =>
    Effect.gen(function*() {
      const lease = { tenantId: "default", rootExecutionId: "root-2", holder: "a", epoch: 1, expiresAt: Number.MAX_SAFE_INTEGER }
      const exit = yield* throughCut(
        "ROLLBACK",
        Effect.flatMap(RecordStore, (records) =>
          records.setStatusFenced({ tenantId: "default", executionId: "root-2", from: "Running", to: "Finished", now: 1, lease }))
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      assert.isFalse(Cause.hasDies(exit.cause), `no defect: ${Cause.pretty(exit.cause)}`)
      const error = Cause.findErrorOption(exit.cause)
      assert.strictEqual(error._tag === "Some" ? (error.value as { _tag: string })._tag : undefined, "LeaseLostError")
    }))
})
