/**
 * From outside: the canceller of a parent resting on its queued children
 * (placement "any") dies right after its durable cancel request landed
 * (killed at its next store call, the lease take of `endIfFree`). README:
 * "Cancelling a parent cancels its children: queued ones never start", and
 * "The cancel writes that durable request before it tries to end a paused
 * tree: an instance that dies after … leaves the parent to end Cancelled …
 * at the next lease take". The parent does end Cancelled — but nothing acts
 * on the request until the last child ended and woke the parent, so every
 * queued child is still claimed and run after the cancel was recorded.
 * Expected: no child starts after the request landed, beyond re-runs of the
 * dead instance's own children (as when the canceller lives: 8 runs).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Cancel from "../../src/runtime/internal/Cancel.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import { backends } from "../runtime/fixtures.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "../runtime/childFixtures.ts"

for (const backend of backends) {
  describe(`a durable cancel request on a parent resting on queued children, its writer dead, on ${backend.name}`, () => {
    it.effect("no queued child starts after the request landed", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "20 seconds")
        const parentLog = { fans: [] as Array<string>, afters: [] as Array<string> }
        const parent = parentWorkflow(child, "any", parentLog)
        const ref: { h?: Harness.Harness; armed: boolean; requested: boolean } = { armed: false, requested: false }
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [parent] },
          instanceOptions: () => ({ maxClaimedChildren: 4 }),
          beforeStoreCall: (call) =>
            Effect.suspend(() => {
              if (!ref.armed || call.index !== 1) return Effect.void
              if (ref.requested) {
                // The first store call after the request's write: instance 1 dies here.
                ref.armed = false
                return ref.h!.kill(1)
              }
              if (call.operation.endsWith("TreeStore.saveReservedIfAbsent") && call.args[2] === Cancel.requestName) ref.requested = true
              return Effect.void
            })
        })
        ref.h = h
        yield* h.run(0, (b) => b.execute(parent, { count: 20 }, { threadId: "p" }))
        yield* h.advance("5 seconds")
        const before = log.runs.length
        ref.armed = true
        yield* h.run(1, (b) => b.cancel("p"))
        yield* h.settle
        assert.isTrue(ref.requested && h.instance(1).state === "dead", "the canceller died right after writing its request")
        const root = (yield* RecordStore.use((r) => r.listByThread("default", "p")))[0]!
        const request = yield* TreeStore.use((t) => t.get("default", root.rootExecutionId, Cancel.requestKey))
        assert.strictEqual(request._tag, "Some", "the request landed")
        for (let i = 0; i < 12; i++) yield* h.advance("20 seconds")
        const ended = (yield* RecordStore.use((r) => r.listByThread("default", "p")))[0]!
        assert.strictEqual(ended.status, "Cancelled", "the parent ends Cancelled")
        // `before` children were at work (4 per instance); the dead instance's 4 may run again.
        assert.isAtMost(log.runs.length, before + 4, `children run after the cancel request landed: ${log.runs.length - before} (at work when it landed: ${before})`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 30_000)
  })
}
