/**
 * What a step slot costs: 10 000 short steps through a cap of 32, once
 * through `StepSlots.withSlot` (the priority queue the runtime uses) and once
 * through effect's own `Semaphore` of 32 permits, in the same process.
 *
 * - A step is `Effect.yieldNow`: it gives the scheduler a turn, so steps
 *   overlap and the ones beyond the cap really wait in the queue.
 * - The steps are started `BENCH_CONCURRENCY` at a time (default 64, twice
 *   the cap): about 32 steps wait at any moment, as on a busy instance.
 * - The slots see mixed claims (depths 1–4, one step in 8 closes a branch,
 *   one in 16 is a new root's first step), so every release picks among
 *   several classes of waiters — the real work of the priority queue.
 * - `bare` runs the same steps with no cap at all: the cost of forking and
 *   running the fibers, which both sides pay. The overhead of each side is
 *   its time minus `bare`'s.
 *
 * - For information, `gate` runs the same number of promise bodies through
 *   the wrapper the runtime puts around LangGraph node bodies
 *   (`StepSlots.passGate`: a slot taken synchronously when one is free, else
 *   a fiber that waits for it), against `bare promises` run with no cap.
 *
 * Each round times every side, the order rotating by round so that drift of
 * the machine hits them alike (and a GC before each when node runs with
 * --expose-gc, as the npm script does); round 0 is a warm-up, not counted.
 *
 *   npm run bench:slots     (BENCH_ROUNDS=21 BENCH_STEPS=10000 BENCH_CAP=32 BENCH_CONCURRENCY=64)
 *
 * Prints ms per side per round, the medians, the overhead per step of the
 * semaphore and the slots over `bare`, and last `ratio: N.NN` — the slots'
 * overhead over the semaphore's (lower is better; the target is ≤ 3).
 */
import { Context, Effect, Semaphore } from "effect"
import type { InstanceShape } from "../src/runtime/internal/Instance.ts"
import * as StepSlots from "../src/runtime/internal/limits/StepSlots.ts"
import type { GraphBuilder } from "../src/runtime/Workflow.ts"

const rounds = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 21))
const steps = Number(process.env.BENCH_STEPS ?? 10_000)
const cap = Number(process.env.BENCH_CAP ?? 32)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64)

const indices = Array.from({ length: steps }, (_, i) => i)
const claims: Array<StepSlots.Claim> = indices.map((i) => ({
  depth: 1 + (i % 4),
  closesBranch: i % 8 === 0,
  newRoot: i % 16 === 1
}))
const step = Effect.yieldNow

const runAll = (wrap: (i: number) => Effect.Effect<void>) =>
  Effect.forEach(indices, wrap, { concurrency, discard: true })

type Side = "bare" | "semaphore" | "slots" | "bare promises" | "gate"

const noGraph: GraphBuilder = { nodes: {}, compile: () => undefined }
const body = () => Promise.resolve()

/** `steps` promise bodies, `concurrency` started at a time, each through `run`. */
const runPromises = (run: (i: number) => Promise<void>) =>
  Effect.promise(async () => {
    let next = 0
    const worker = async () => {
      while (next < steps) await run(next++)
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
  })

const sides: Record<Side, () => Effect.Effect<void>> = {
  bare: () => runAll(() => step),
  semaphore: () =>
    Effect.suspend(() => {
      const semaphore = Semaphore.makeUnsafe(cap)
      const withPermit = semaphore.withPermits(1)
      return runAll(() => withPermit(step))
    }),
  slots: () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(cap)
      yield* runAll((i) => slots.withSlot(claims[i]!)(step))
      if (slots.busy !== 0 || slots.waiting !== 0) throw new Error("bench: the slots did not all come back")
    }),
  "bare promises": () => runPromises(() => body()),
  gate: () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(cap)
      const instance = { services: Context.make(StepSlots.StepSlots, slots) } as unknown as InstanceShape
      const gate = StepSlots.passGate(instance, {
        graph: noGraph,
        depth: 1,
        newRoot: false,
        signal: new AbortController().signal,
        park: () => {}
      })!
      yield* runPromises(() => gate("step", body))
      if (slots.busy !== 0 || slots.waiting !== 0) throw new Error("bench: the gate's slots did not all come back")
    })
}
const gc = (globalThis as { gc?: () => void }).gc

const time = async (side: Side): Promise<number> => {
  gc?.()
  const started = performance.now()
  await Effect.runPromise(sides[side]())
  return performance.now() - started
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const order: ReadonlyArray<Side> = ["bare", "semaphore", "slots", "bare promises", "gate"]
const results: Record<Side, Array<number>> = { bare: [], semaphore: [], slots: [], "bare promises": [], gate: [] }
console.log(`${steps} steps, cap ${cap}, ${concurrency} started at a time, ${rounds - 1} rounds (+1 warm-up)`)
for (let round = 0; round < rounds; round++) {
  const turn = order.map((_, k) => order[(k + round) % order.length]!)
  const times: Partial<Record<Side, number>> = {}
  for (const side of turn) times[side] = await time(side)
  if (round === 0) continue
  for (const side of order) results[side].push(times[side]!)
  console.log(`round ${round}: ${order.map((s) => `${s} ${times[s]!.toFixed(1)} ms`).join(", ")}`)
}
const med = Object.fromEntries(order.map((s) => [s, median(results[s])])) as Record<Side, number>
console.log(`median: ${order.map((s) => `${s} ${med[s].toFixed(1)} ms`).join(", ")}`)
const overhead = (side: "semaphore" | "slots") => median(results[side].map((t, k) => t - results.bare[k]!))
const perStep = (ms: number) => `${((ms * 1e6) / steps).toFixed(0)} ns/step`
console.log(`overhead over bare: semaphore ${perStep(overhead("semaphore"))}, slots ${perStep(overhead("slots"))}`)
console.log(`gate over bare promises (the runtime's wrapper, for information): ${perStep(med.gate - med["bare promises"])}`)
console.log(`total ratio (slots / semaphore, bare included): ${(med.slots / med.semaphore).toFixed(2)}`)
console.log(`ratio: ${(overhead("slots") / overhead("semaphore")).toFixed(2)}`)
