/**
 * The recovery sweep's look had no limit without
 * `maxConcurrentSteps` — it started a recovery for every orphaned tree at once.
 * `maxRecoveriesPerLook` (default 100) bounds how many recoveries the sweep of
 * one instance runs at once: 300 orphaned trees are recovered in batches, and
 * every one of them finishes. On the Harness's TestClock.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Clock, Effect, Exit, Fiber, Layer, Option } from "effect"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { memoryStores } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** What the step bodies of one instance did: how many ran at once (at most), and when each started. */
interface Seen {
  running: number
  most: number
  readonly startedAt: Array<number>
}

/** One step that runs 45 s on the Clock; its bodies on `watched` (or a restart of it) are counted in `seen`. */
const orphan = (watched: string, seen: Seen) =>
  Workflow.make({
    name: "orphan",
    version: "1",
    graph: new StateGraph(State)
      .addNode("work", Workflow.effectStep((_s, ctx) => {
        if (!ctx.instanceId.startsWith(watched)) return Effect.as(Effect.sleep("45 seconds"), { log: ["worked"] }) // the Harness's TestClock
        return Effect.gen(function*() {
          seen.startedAt.push(yield* Clock.currentTimeMillis)
          seen.running++
          seen.most = Math.max(seen.most, seen.running)
          yield* Effect.sleep("45 seconds") // the Harness's TestClock
          return { log: ["worked"] }
        }).pipe(Effect.ensuring(Effect.sync(() => seen.running--)))
      }))
      .addEdge(START, "work")
      .addEdge("work", END)
  })

const countOf = (status: "Running" | "Finished") =>
  RecordStore.use((r) => r.findByStatus(status, 1_000, Option.none())).pipe(Effect.map((page) => page.length))

/**
 * `trees` trees started on instance 0, which dies mid-step; instance 1's sweep
 * recovers them, the clock moving 15 s at a time for at most `within`. With
 * `restart`, instance 1 is restarted after the kill: its first look sees every
 * orphan's lease live and wakes at their expiry. Answers what instance 1's
 * step bodies did once all of them finished.
 */
const recoverOrphans = (
  options: Omit<BatonConfig.BatonOptions, "workflows" | "instanceId">,
  { restart = false, trees = 300, within = 600_000 } = {}
) =>
  Effect.gen(function*() {
    const seen: Seen = { running: 0, most: 0, startedAt: [] }
    const wf = orphan("instance-1", seen)
    const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], ...options } })
    const starts = yield* Effect.forEach(Array.from({ length: trees }), () => h.run(0, (b) => b.start(wf, { log: [] })))
    yield* Effect.forEach(starts, Fiber.join)
    yield* h.settle
    assert.strictEqual(yield* countOf("Running"), trees)
    yield* h.kill(0)
    if (restart) yield* h.restart(1)
    for (let t = 0; t < within && (yield* countOf("Finished")) < trees; t += 15_000) yield* h.advance("15 seconds")
    assert.strictEqual(yield* countOf("Finished"), trees, `every orphaned tree was recovered and finished within ${within} ms`)
    assert.strictEqual(seen.startedAt.length, trees, "each tree was recovered once")
    return seen
  }).pipe(Effect.provide(Layer.fresh(memoryStores)))

/** The distinct times at which recoveries started: one per batch. */
const batches = (seen: Seen) => new Set(seen.startedAt).size

describe("the recovery sweep runs a bounded number of recoveries at once", () => {
  it.effect("by default at most 100: 300 orphaned trees are recovered in batches, and all finish", () =>
    Effect.gen(function*() {
      const seen = yield* recoverOrphans({})
      assert.strictEqual(seen.most, 100, `at most 100 recoveries at once (saw ${seen.most})`)
      assert.isAtLeast(batches(seen), 3, "300 trees in at least three batches of 100")
    }), 30_000)

  it.effect("maxRecoveriesPerLook sets the bound, with step slots the smaller of the two", () =>
    Effect.gen(function*() {
      const seen = yield* recoverOrphans({ maxRecoveriesPerLook: 40 })
      assert.strictEqual(seen.most, 40, `at most 40 recoveries at once (saw ${seen.most})`)
      assert.isAtLeast(batches(seen), 8, "300 trees in at least eight batches of 40")
      const slotted = yield* recoverOrphans({ maxRecoveriesPerLook: 40, maxConcurrentSteps: 25 })
      assert.strictEqual(slotted.most, 25, `the step slots bound it below the cap (saw ${slotted.most})`)
    }), 30_000)

  it.effect("a batch's end starts the next one at once, not at the next sweep interval", () =>
    Effect.gen(function*() {
      // One at a time: the release of each wakes the sweep before its recovery stops counting as running.
      const single = yield* recoverOrphans({ maxRecoveriesPerLook: 1, sweepInterval: "1 hour" }, { restart: true, trees: 3, within: 240_000 })
      assert.deepStrictEqual([single.most, single.startedAt], [1, [30_000, 75_000, 120_000]])
      // Leases expire 30 s after the kill; then three batches of 45 s: done in 165 s, long before the 1 h interval.
      const seen = yield* recoverOrphans({ maxRecoveriesPerLook: 40, sweepInterval: "1 hour" }, { restart: true, trees: 120, within: 240_000 })
      assert.strictEqual(seen.most, 40)
      const at = new Map<number, number>()
      for (const t of seen.startedAt) at.set(t, (at.get(t) ?? 0) + 1)
      assert.strictEqual(batches(seen), 3, `three batches of 40: ${JSON.stringify([...at])}`)
    }), 30_000)
})

describe("maxRecoveriesPerLook is checked and read from BATON_MAX_RECOVERIES_PER_LOOK", () => {
  const fromEnv = (env: Record<string, string>) =>
    Effect.service(BatonConfig.BatonConfig).pipe(
      Effect.provide(BatonConfig.layerConfig()),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))),
      Effect.exit
    )

  it.effect("a whole number ≥ 1; a bad value names the field (and the key it came from)", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* BatonConfig.make({})).maxRecoveriesPerLook, 100)
      assert.strictEqual((yield* BatonConfig.make({ maxRecoveriesPerLook: 7 })).maxRecoveriesPerLook, 7)
      for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "10" as never]) {
        const exit = yield* Effect.exit(BatonConfig.make({ maxRecoveriesPerLook: bad }))
        assert.isTrue(Exit.isFailure(exit), `${String(bad)} is refused`)
        const error = Exit.isFailure(exit) ? Exit.findErrorOption(exit) : Option.none()
        assert.strictEqual(Option.isSome(error) ? error.value.field : undefined, "maxRecoveriesPerLook")
      }
      const read = yield* fromEnv({ BATON_MAX_RECOVERIES_PER_LOOK: "250" })
      assert.strictEqual(Exit.isSuccess(read) ? read.value.maxRecoveriesPerLook : undefined, 250)
      const refused = yield* fromEnv({ BATON_MAX_RECOVERIES_PER_LOOK: "0" })
      const error = Exit.isFailure(refused) ? Exit.findErrorOption(refused) : Option.none()
      assert.strictEqual(Option.isSome(error) ? error.value.field : undefined, "maxRecoveriesPerLook")
      assert.include(Option.isSome(error) ? error.value.message : "", "BATON_MAX_RECOVERIES_PER_LOOK")
    }))
})
