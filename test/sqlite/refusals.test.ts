/**
 * A fenced write refused by any store says why the same way: what was
 * refused, and what the lease row says now (passed to whom, released,
 * expired) — the same text on SQLite and in memory.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import * as Path from "node:path"
import { MemoryStores } from "../../layers/memory/index.ts"
import { SqlStores } from "../../layers/sql/index.ts"
import { SqliteClient, SqliteMigrations } from "../../layers/sqlite/index.ts"
import { ExecutionHistoryStore, type ExecutionSnapshot } from "../../src/stores/ExecutionHistoryStore.ts"
import * as Ids from "../../src/stores/Ids.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import type { Pause } from "../../src/stores/Pause.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("refusals")
const ttl = 1_000

const backends: Record<"memory" | "sqlite", () => Layer.Layer<LeaseStore | TreeStore | PauseStore | ExecutionHistoryStore, unknown>> = {
  memory: () => MemoryStores.layer,
  sqlite: () =>
    SqlStores.layer().pipe(
      Layer.provide(SqliteMigrations.layer()),
      Layer.provideMerge(SqliteClient.layer({ path: Path.join(dir, `refusals-${Math.random().toString(36).slice(2)}.db`) })),
      Layer.provide(Ids.layer)
    )
}

const snapshotOf = (lease: Lease): ExecutionSnapshot => ({
  tenantId: lease.tenantId,
  executionId: lease.rootExecutionId,
  threadId: "thread-1",
  workflowName: "triage",
  workflowVersion: "1",
  configHash: "abc",
  inputHash: null,
  status: "Finished",
  error: null,
  startedAt: 0,
  endedAt: 10,
  steps: [],
  pauses: [],
  spend: null,
  endedBy: { holder: lease.holder, epoch: lease.epoch }
})

const pauseOf = (lease: Lease, pauseId: string): Pause => ({
  tenantId: lease.tenantId,
  threadId: "thread-1",
  pauseId,
  rootExecutionId: lease.rootExecutionId,
  executionId: lease.rootExecutionId,
  interruptId: "interrupt-1",
  payload: { question: "send?" },
  status: "Pending",
  decision: null,
  createdAt: 0,
  resolvedAt: null,
  resolvedBy: null
})

/** The reason a refused write failed with. */
const reasonOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "refused")
    const error = (exit as Exit.Failure<A, E>).cause.reasons[0] as { readonly error?: { readonly _tag?: string; readonly reason?: string } }
    assert.strictEqual(error.error?._tag, "LeaseLostError")
    return error.error!.reason!
  })

describe.each(Object.keys(backends) as Array<keyof typeof backends>)("fenced refusals (%s)", (backend) => {
  it.effect("tree write, pause save and history snapshot say who holds the lease now, or that it was released or expired", () =>
    Effect.gen(function*() {
      const ctx = yield* Layer.build(backends[backend]())
      const leases = Context.get(ctx, LeaseStore)
      const tree = Context.get(ctx, TreeStore)
      const pauses = Context.get(ctx, PauseStore)
      const history = Context.get(ctx, ExecutionHistoryStore)
      const writes = (lease: Lease, now: number, n: number) => ({
        "tree write": tree.saveReservedFenced(lease.tenantId, lease.rootExecutionId, `key-${n}`, { n }, lease, now),
        "pause save": pauses.saveFenced(pauseOf(lease, `pause-${n}`), lease, now),
        "history snapshot": history.saveIfAbsent(snapshotOf(lease), lease, now)
      })
      const expectReasons = (lease: Lease, now: number, n: number, reason: string) =>
        Effect.forEach(Object.entries(writes(lease, now, n)), ([what, write]) =>
          Effect.map(reasonOf(write), (got) => assert.strictEqual(got, `a fenced ${what} was refused: ${reason}`, what)))

      const a = Option.getOrThrow(yield* leases.acquire("default", "root-1", "a", ttl, 0))
      yield* expectReasons(a, ttl, 1, `the lease expired at ${ttl}, before this write at ${ttl}`)
      const b = Option.getOrThrow(yield* leases.acquire("default", "root-1", "b", ttl, ttl + 1))
      yield* expectReasons(a, ttl + 2, 2, `the lease passed to b (epoch ${b.epoch})`)
      assert.isTrue(yield* leases.release(b))
      yield* expectReasons(b, ttl + 3, 3, `the lease was released (epoch ${b.epoch})`)
      yield* expectReasons({ ...a, rootExecutionId: "root-none" }, 1, 4, "no lease exists for this tree")
    }).pipe(Effect.scoped))
})
