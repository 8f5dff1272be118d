/**
 * Claims race on Postgres: 8 connections (each its own pool) claim from one
 * queue at once; every queued child is claimed by exactly one of them
 * (`FOR UPDATE SKIP LOCKED`), and a child whose claim expired is claimed
 * again by exactly one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { ChildQueueStore, type QueuedChild } from "../../src/stores/ChildQueueStore.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("child_claims")
const connections = 8
const children = 400

/** A queue on a pool of its own (one connection). */
const queueOn = () => Effect.map(Layer.build(PgStores.layerChildQueueStore({ url, schema, maxConnections: 1 })), (ctx) => Context.get(ctx, ChildQueueStore))

const child = (i: number, launchId: string): QueuedChild => ({
  tenantId: i % 2 === 0 ? "tenant-a" : "tenant-b",
  executionId: `${launchId}.${i}`,
  rootExecutionId: "root",
  parentExecutionId: "root",
  threadId: `${launchId}.${i}`,
  depth: 2 + (i % 3),
  workflowName: "child",
  input: { i },
  status: "Queued",
  claimedBy: null,
  queuedAt: 1_000 + i,
  claimExpiresAt: null,
  result: null,
  launchId,
  position: i
})

/** Each connection claims until the queue answers none; what each got. */
const drain = (queues: ReadonlyArray<ChildQueueStore["Service"]>, now: number) =>
  Effect.forEach(queues, (q, n) =>
    Effect.gen(function*() {
      const got: Array<QueuedChild> = []
      while (true) {
        const c = yield* q.claim(`worker-${n}`, 30_000, now)
        if (Option.isNone(c)) return got
        got.push(c.value)
      }
    }), { concurrency: "unbounded" })

describe("child claims on Postgres", () => {
  it.live(`${connections} connections claim ${children} children at once: each is claimed exactly once, deepest first per claimer`, () =>
    Effect.scoped(Effect.gen(function*() {
      const queues = yield* Effect.forEach(Array.from({ length: connections }), () => queueOn())
      const launchId = "race-1"
      yield* Effect.forEach(Array.from({ length: children }, (_, i) => child(i, launchId)), (c) => queues[0]!.saveIfAbsent(c), { concurrency: 8 })
      const got = yield* drain(queues, 10_000)
      const all = got.flat().map((c) => c.executionId)
      assert.strictEqual(all.length, children, "every child claimed")
      assert.strictEqual(new Set(all).size, children, "no child claimed twice")
      assert.isAbove(got.filter((g) => g.length > 0).length, 1, "several connections won claims")
      for (const mine of got) {
        for (let i = 1; i < mine.length; i++) assert.isAtMost(mine[i]!.depth, mine[i - 1]!.depth, "each claimer took deeper children first")
      }
      // every claim expired (a dead fleet): the next race reclaims each exactly once
      const again = (yield* drain(queues, 10_000 + 30_000)).flat().map((c) => c.executionId)
      assert.strictEqual(again.length, children)
      assert.strictEqual(new Set(again).size, children)
      assert.strictEqual(yield* queues[1]!.countOpen("tenant-a", launchId), children / 2)
      yield* queues[0]!.deleteRoot("tenant-a", "root")
      yield* queues[0]!.deleteRoot("tenant-b", "root")
    })), { timeout: 60_000 })
})
