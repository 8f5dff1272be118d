/**
 * From outside: a parent resting on 20 children (placement "any", two
 * instances claiming them) is cancelled from instance 1, which is killed at
 * its n-th store call of the cancel (n swept; n large enough = not killed).
 * What must hold once the clock ran on: the parent has ended — Cancelled
 * when the cancel's request landed (never Finished after a `cancelled: true`)
 * — its "after" step did not run if it ended Cancelled, and no child stays
 * Running or Paused for ever (README: "Cancelling a parent cancels its
 * children: queued ones never start, running ones get a durable cancel
 * request their holder reads within one renewal").
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as Harness from "../../../src/testing/Harness.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { backends } from "../fixtures.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./childFixtures.ts"

const points = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 1000]

for (const backend of backends) {
  describe(`cancelling a parent resting on its children, the canceller killed at its n-th store call, on ${backend.name}`, () => {
    for (const n of points) {
      it.effect(`n = ${n}`, () =>
        Effect.gen(function*() {
          const log = makeChildLog()
          const child = childWorkflow(log, "20 seconds")
          const parentLog = { fans: [] as Array<string>, afters: [] as Array<string> }
          const parent = parentWorkflow(child, "any", parentLog)
          const ref: { h?: Harness.Harness; count: number; armed: boolean; killedAt?: string } = { count: 0, armed: false }
          const h = yield* Harness.make({
            instances: 2,
            baton: { workflows: [parent] },
            instanceOptions: () => ({ maxClaimedChildren: 4 }),
            beforeStoreCall: (call) =>
              Effect.suspend(() => {
                if (!ref.armed || call.index !== 1 || ++ref.count !== n) return Effect.void
                ref.armed = false
                ref.killedAt = call.operation
                return ref.h!.kill(1)
              })
          })
          ref.h = h
          const run = yield* h.run(0, (b) => b.execute(parent, { count: 20 }, { threadId: "p" }))
          yield* h.advance("5 seconds")
          ref.armed = true
          const cancel = yield* h.run(1, (b) => b.cancel("p"))
          yield* h.settle
          ref.armed = false
          for (let i = 0; i < 12; i++) yield* h.advance("20 seconds")
          const cancelled = yield* Fiber.await(cancel)
          const ran = yield* Fiber.await(run)
          const records = yield* RecordStore.use((r) => r.findByStatus("Running", 100, Option.none()))
          const pausedRecords = yield* RecordStore.use((r) => r.findByStatus("Paused", 100, Option.none()))
          const root = (yield* RecordStore.use((r) => r.listByThread("default", "p")))[0]!
          const what = `killed at ${ref.killedAt ?? "(not killed)"}; cancel ${Exit.isSuccess(cancelled) ? JSON.stringify(cancelled.value) : "died"}; parent ${root.status}; execute ${Exit.isSuccess(ran) ? ran.value._tag : String(ran).slice(0, 200)}; running ${records.length}; paused ${pausedRecords.length}; afters ${parentLog.afters.length}`
          if (process.env.BREAK_SHOW) console.log(`[n=${n}] ${what}; child runs ${log.runs.length}`)
          assert.include(["Finished", "Cancelled"], root.status, what)
          if (Exit.isSuccess(cancelled) && cancelled.value.cancelled) assert.strictEqual(root.status, "Cancelled", what)
          if (root.status === "Cancelled") assert.strictEqual(parentLog.afters.length, 0, what)
          assert.strictEqual(records.length, 0, `no execution left Running: ${what}`)
          assert.strictEqual(pausedRecords.length, 0, `no execution left Paused: ${what}`)
        }).pipe(Effect.provide(Layer.fresh(backend.stores))), 30_000)
    }
  })
}
