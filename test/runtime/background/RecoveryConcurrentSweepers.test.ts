/**
 * Three instances recovering the same orphaned trees collided — every
 * instance's look paged the orphans in the same order and started recoveries
 * of the same first trees, so most lease acquires of a recovery were refused
 * (34k acquires for 15k recoveries over Postgres). Each instance now visits a
 * page's roots in its own order, and a page is passed only once every root
 * in it was visited: the instances spread over the orphans, and none is
 * starved. On the Harness's TestClock, over memory and SQLite.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Fiber, Layer, Option } from "effect"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({
  seconds: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step that runs its input's `seconds` on the Clock; every body is noted with the instance that ran it. */
const orphan = (ran: Array<string>) =>
  Workflow.make({
    name: "orphan",
    version: "1",
    graph: new StateGraph(State)
      .addNode("work", Workflow.effectStep((s: typeof State.State, ctx) =>
        Effect.sync(() => ran.push(ctx.instanceId)).pipe(Effect.andThen(Effect.sleep(Duration.seconds(s.seconds))), Effect.as({ log: ["worked"] })) // on the Harness's TestClock
      ))
      .addEdge(START, "work")
      .addEdge("work", END)
  })

/** The trees' lease acquires, and the times (Clock) of those refused: another holder had just taken the tree. */
interface Acquires {
  tried: number
  readonly refusedAt: Array<number>
}

/**
 * The backend's stores, with a LeaseStore that counts the trees' acquires (not a fleet job's) and refusals by
 * the holder's instance. Its reads and acquires yield first, as a round trip to a shared store lets the other
 * instances go on meanwhile (without it, one instance's look and the acquires it started ran before any other).
 */
const countingAcquires = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, acquires: Acquires) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const leases = Context.get(context, LeaseStore)
    return Context.add(context, LeaseStore, {
      ...leases,
      get: (tenantId, root) => Effect.andThen(Effect.yieldNow, leases.get(tenantId, root)),
      getMany: (roots) => Effect.andThen(Effect.yieldNow, leases.getMany(roots)),
      acquire: (tenantId, root, holder, ttl, now) =>
        Effect.andThen(Effect.yieldNow, leases.acquire(tenantId, root, holder, ttl, now).pipe(Effect.tap((got) =>
          Effect.sync(() => {
            if (tenantId !== "default") return
            acquires.tried++
            if (Option.isNone(got)) acquires.refusedAt.push(now)
          })
        )))
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

const countOf = (status: "Running" | "Finished") =>
  RecordStore.use((r) => r.findByStatus(status, 1_000, Option.none())).pipe(Effect.map((page) => page.length))

for (const backend of backends) {
  describe(`three instances recover orphaned trees without colliding, on ${backend.name}`, () => {
    it.effect("300 trees of a closed instance: each recovered once, few acquires refused, every recovering instance takes a share", () => {
      const acquires: Acquires = { tried: 0, refusedAt: [] }
      const trees = 300
      return Effect.gen(function*() {
        const ran: Array<string> = []
        const wf = orphan(ran)
        // Step slots as in the bench: each instance recovers at most 32 trees at once.
        const h = yield* Harness.make({ instances: 4, baton: { workflows: [wf], maxConcurrentSteps: 32 } })
        const starts = yield* Effect.forEach(Array.from({ length: trees }), (_, i) => h.run(0, (b) => b.start(wf, { seconds: 5 + (i * 7_919) % 41, log: [] })))
        yield* Effect.forEach(starts, Fiber.join)
        yield* h.settle
        assert.strictEqual(yield* countOf("Running"), trees)
        // A graceful close releases every lease at once: the three others' sweeps are woken together.
        acquires.tried = 0
        const closedAt = yield* Clock.currentTimeMillis
        const closing = yield* Effect.forkChild(h.close(0))
        for (let t = 0; t < 900_000 && (yield* countOf("Finished")) < trees; t += 15_000) yield* h.advance("15 seconds")
        yield* Fiber.join(closing)
        assert.strictEqual(yield* countOf("Finished"), trees, "every orphaned tree was recovered and finished")
        const recovered = ran.filter((id) => id !== "instance-0")
        assert.strictEqual(recovered.length, trees, "each tree's step ran once in a recovery")
        const refused = acquires.refusedAt.length
        const later = acquires.refusedAt.filter((at) => at > closedAt).length
        // Before: every look took the page's first orphans, the same as the others' (197 refused: 160 at the
        // close, 37 later as recoveries ended; now 89 and 10). The rest of the acquires found a tree that ended
        // between the look's read of its record and of its lease (the harness ends many at one instant).
        assert.isAtMost(refused, trees * 0.4, `acquires refused: ${refused} of ${acquires.tried}`)
        assert.isAtMost(later, trees / 15, `acquires refused after the close: ${later}`)
        for (const id of ["instance-1", "instance-2", "instance-3"]) {
          const share = recovered.filter((r) => r === id).length
          assert.isAtLeast(share, trees / 6, `${id} recovered ${share} of ${trees}`)
        }
      }).pipe(Effect.provide(countingAcquires(backend.stores, acquires)))
    }, 60_000)
  })
}
