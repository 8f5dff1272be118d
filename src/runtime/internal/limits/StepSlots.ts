/**
 * Step slots: a per-instance cap on the steps (node visits) running at once,
 * across every tree and tenant of the instance (`maxConcurrentSteps`).
 *
 * Every node visit takes one slot before its body runs — each branch of a
 * parallel fan-out is one visit — and gives it back when the body ends,
 * fails, pauses (LangGraph's `interrupt` throws) or is interrupted. A step
 * without a free slot waits, never fails, and a freed slot goes straight to
 * the most urgent waiter:
 *
 * 1. a step that closes a branch (see {@link branchClosers});
 * 2. then the highest level: the depth of the step's execution (roots are
 *    depth 1) plus one level for every {@link agingPeriod} it has waited on
 *    the Clock — so a shallow step that waited long enough overtakes deeper
 *    steps that arrived after it;
 * 3. at the same level, the first step of a brand-new root comes last
 *    (work already under way finishes before new work starts);
 * 4. then arrival order.
 *
 * A waiter that is interrupted — its pass aborted by a cancel, a lost lease
 * or a closing instance — leaves the queue at once; if a slot had been handed
 * to it in that very instant, the slot goes on to the next waiter. A step
 * that holds a slot needs nothing else to end, so the slots cannot deadlock;
 * a step that runs other steps inside its own body (a subgraph invoked from a
 * node) runs them in its own slot.
 *
 * The slots live in one process: each instance caps itself, nothing goes
 * through a store. Aging needs no timer: levels are computed from the Clock
 * when a slot frees.
 *
 * @since 0.1.0
 */
import { END, START } from "@langchain/langgraph"
import { Cause, Clock, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { AsyncLocalStorage } from "node:async_hooks"
import type { HealthComponent } from "../../Health.ts"
import type { InstanceShape } from "../Instance.ts"
import type { GraphBuilder } from "../../Workflow.ts"
import * as Options from "../../../stores/internal/options.ts"

/**
 * Each period of waiting counts as one level deeper.
 *
 * @category internal
 * @since 0.1.0
 */
export const agingPeriod: Duration.Duration = Duration.seconds(10)

/**
 * What a step brings to the queue: how urgent it is.
 *
 * @category models
 * @since 0.1.0
 */
export interface Claim {
  /** The step closes a branch: it goes before every other waiter. */
  readonly closesBranch: boolean
  /** The depth of the step's execution record (a root is 1). */
  readonly depth: number
  /** The first step of a new root: after the other waiters of its level. */
  readonly newRoot: boolean
}

/**
 * The step slots of one instance.
 *
 * @category models
 * @since 0.1.0
 */
export interface StepSlotsShape {
  /** How many steps may run at once. */
  readonly capacity: number
  /** Slots held now. */
  readonly busy: number
  /** Steps waiting for a slot now. */
  readonly waiting: number
  /** Slots free now (0 while any step waits). */
  readonly free: number
  /** Takes a slot, waiting in priority order while none is free; interrupting the wait leaves the queue. */
  readonly take: (claim: Claim) => Effect.Effect<void>
  /** Gives a slot back: to the most urgent waiter, or free. */
  readonly release: Effect.Effect<void>
  /** Takes a slot if one is free now, without waiting. */
  readonly tryTakeUnsafe: () => boolean
  readonly releaseUnsafe: () => void
  /** Runs `self` in a slot: waits for it (interruptibly), gives it back however `self` ends. */
  readonly withSlot: (claim: Claim) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * The step slots of one instance, as a service steps find with the instance's services.
 *
 * @category services
 * @since 0.1.0
 */
export class StepSlots extends Context.Service<StepSlots, StepSlotsShape>()("baton/StepSlots") {}

interface Waiter {
  readonly claim: Claim
  readonly enqueuedAt: number
  readonly seq: number
  readonly bucket: Bucket
  state: "waiting" | "granted" | "gone"
  resume: (effect: Effect.Effect<void>) => void
  prev: Waiter | undefined
  next: Waiter | undefined
}

/**
 * Waiters of one (closes branch, depth, new root) class, oldest first.
 * Within a class every waiter has the same depth, so the oldest also has the
 * highest aged level: each class's head is its best waiter, and choosing
 * the next waiter only compares the heads of the (few) classes.
 */
interface Bucket {
  readonly key: string
  head: Waiter | undefined
  tail: Waiter | undefined
}

class SlotsImpl implements StepSlotsShape {
  readonly capacity: number
  readonly clock: Clock.Clock
  readonly agingMillis: number
  busy = 0
  waiting = 0
  seq = 0
  readonly buckets = new Map<string, Bucket>()

  constructor(capacity: number, clock: Clock.Clock, agingMillis: number) {
    this.capacity = capacity
    this.clock = clock
    this.agingMillis = agingMillis
  }

  get free() {
    return this.capacity - this.busy
  }

  tryTakeUnsafe(): boolean {
    // A waiter is handed a slot directly on release, so waiters exist only while every slot is busy.
    if (this.busy >= this.capacity) return false
    this.busy++
    return true
  }

  releaseUnsafe(): void {
    const next = this.best()
    if (next === undefined) {
      this.busy--
      return
    }
    // The slot changes hands without ever being free: no later arrival can take it first.
    this.unlink(next)
    next.state = "granted"
    // Resumed through a yield, so a chain of short steps does not grow the stack.
    next.resume(Effect.yieldNow)
  }

  readonly release: Effect.Effect<void> = Effect.sync(() => this.releaseUnsafe())

  take(claim: Claim): Effect.Effect<void> {
    return Effect.suspend(() => (this.tryTakeUnsafe() ? Effect.void : this.wait(claim)))
  }

  wait(claim: Claim): Effect.Effect<void> {
    return Effect.callback<void>((resume) => {
      const waiter = this.enqueue(claim, resume)
      return Effect.sync(() => this.leave(waiter))
    })
  }

  withSlot(claim: Claim) {
    return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.uninterruptibleMask((restore) =>
        this.tryTakeUnsafe()
          ? Effect.ensuring(restore(self), this.release)
          : Effect.flatMap(restore(this.wait(claim)), () => Effect.ensuring(restore(self), this.release))
      )
  }

  enqueue(claim: Claim, resume: (effect: Effect.Effect<void>) => void): Waiter {
    const key = `${claim.closesBranch ? 1 : 0}:${claim.newRoot ? 1 : 0}:${claim.depth}`
    let bucket = this.buckets.get(key)
    if (bucket === undefined) {
      bucket = { key, head: undefined, tail: undefined }
      this.buckets.set(key, bucket)
    }
    const waiter: Waiter = {
      claim,
      enqueuedAt: this.clock.currentTimeMillisUnsafe(),
      seq: this.seq++,
      bucket,
      state: "waiting",
      resume,
      prev: bucket.tail,
      next: undefined
    }
    if (bucket.tail === undefined) bucket.head = waiter
    else bucket.tail.next = waiter
    bucket.tail = waiter
    this.waiting++
    return waiter
  }

  unlink(waiter: Waiter): void {
    const { bucket } = waiter
    if (waiter.prev === undefined) bucket.head = waiter.next
    else waiter.prev.next = waiter.next
    if (waiter.next === undefined) bucket.tail = waiter.prev
    else waiter.next.prev = waiter.prev
    waiter.prev = waiter.next = undefined
    if (bucket.head === undefined) this.buckets.delete(bucket.key)
    this.waiting--
  }

  /** An interrupted waiter: out of the queue, or — if a slot reached it meanwhile — the slot goes on. */
  leave(waiter: Waiter): void {
    if (waiter.state === "waiting") this.unlink(waiter)
    else if (waiter.state === "granted") this.releaseUnsafe()
    waiter.state = "gone"
  }

  /** The most urgent waiter: compares the head of each class. */
  best(): Waiter | undefined {
    if (this.waiting === 0) return undefined
    const now = this.clock.currentTimeMillisUnsafe()
    let best: Waiter | undefined
    let bestLevel = 0
    for (const bucket of this.buckets.values()) {
      const w = bucket.head!
      const level = w.claim.depth + Math.floor((now - w.enqueuedAt) / this.agingMillis)
      if (best === undefined || before(w, level, best, bestLevel)) {
        best = w
        bestLevel = level
      }
    }
    return best
  }
}

/** Whether waiter `a` (at `aLevel`) goes before waiter `b` (at `bLevel`). */
const before = (a: Waiter, aLevel: number, b: Waiter, bLevel: number): boolean => {
  if (a.claim.closesBranch !== b.claim.closesBranch) return a.claim.closesBranch
  if (aLevel !== bLevel) return aLevel > bLevel
  if (a.claim.newRoot !== b.claim.newRoot) return b.claim.newRoot
  return a.seq < b.seq
}

/**
 * Slots over `clock` (waiting time is read from it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe = (
  capacity: number,
  clock: Clock.Clock,
  options?: { readonly agingPeriod?: Duration.Input | undefined }
): StepSlotsShape => {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`step slots: capacity must be a whole number ≥ 1 (got ${capacity})`)
  const agingMillis = options?.agingPeriod === undefined ? Duration.toMillis(agingPeriod) : Options.millisOf(options.agingPeriod)
  if (agingMillis === undefined || !(agingMillis > 0)) throw new RangeError(`step slots: agingPeriod must be a duration > 0 (got ${Options.show(options?.agingPeriod)})`)
  return new SlotsImpl(capacity, clock, agingMillis)
}

/**
 * Slots on the Clock in context. `capacity` must be a whole number ≥ 1 (the runtime checks `maxConcurrentSteps` first).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (capacity: number, options?: { readonly agingPeriod?: Duration.Input | undefined }): Effect.Effect<StepSlotsShape> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    return makeUnsafe(capacity, clock, options)
  })

/**
 * Step slots of `capacity` as a Layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (capacity: number): Layer.Layer<StepSlots> => Layer.effect(StepSlots, make(capacity))

/**
 * The instance's slots, if it caps its steps.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromInstance = (instance: InstanceShape): StepSlotsShape | undefined =>
  Option.getOrUndefined(Context.getOption(instance.services, StepSlots))

/**
 * The readiness component: Degraded while every slot is busy, with the counts.
 *
 * @category internal
 * @since 0.1.0
 */
export const healthComponent = (slots: StepSlotsShape): HealthComponent => {
  const { busy, capacity, waiting } = slots
  return busy >= capacity
    ? {
      name: "step-slots",
      status: "Degraded",
      message: `${busy} of ${capacity} step slots busy, ${waiting} ${waiting === 1 ? "step" : "steps"} waiting`
    }
    : { name: "step-slots", status: "Healthy", message: `${busy} of ${capacity} step slots busy` }
}

/**
 * What readiness (`observe/Probes.ts`) adds for the slots: nothing when there is no cap.
 *
 * @category internal
 * @since 0.1.0
 */
export const readiness = (slots: StepSlotsShape | undefined): Effect.Effect<ReadonlyArray<HealthComponent>> =>
  slots === undefined ? Effect.succeed([]) : Effect.sync(() => [healthComponent(slots)])

const closersCache = new WeakMap<object, ReadonlySet<string>>()

/**
 * The nodes of a graph whose visit closes a branch. Decided once per graph
 * from its declared shape, because a running task cannot tell: LangGraph
 * gives a node reached over two plain edges one trigger channel
 * (`branch:to:<node>`) however many branches wrote to it. A node closes a
 * branch when
 *
 * - it is the end of a waiting edge with several starts
 *   (`addEdge(["left", "right"], "join")`): LangGraph runs it only once every
 *   start has finished — a join by declaration; or
 * - it can be reached from two or more distinct nodes (plain edges, the
 *   declared ends of conditional edges, a node's declared `Command` ends):
 *   branches, parallel or alternative, come together there.
 *
 * `START` is not counted as a source and a node's edge to itself is not
 * counted, so the entry of a loop (`START → agent ⇄ tools`) is not a closer.
 * A fan-out by `Send` is not visible in the graph's shape: the node after a
 * `Send` target closes that fan-out only if it also has another source.
 *
 * @category internal
 * @since 0.1.0
 */
export const branchClosers = (graph: GraphBuilder): ReadonlySet<string> => {
  const cached = closersCache.get(graph)
  if (cached !== undefined) return cached
  const shape = graph as unknown as {
    readonly edges?: Iterable<readonly [string, string]>
    readonly waitingEdges?: Iterable<readonly [ReadonlyArray<string>, string]>
    readonly branches?: Record<string, Record<string, { readonly ends?: Record<string, string> | undefined }>>
    readonly nodes?: Record<string, { readonly ends?: ReadonlyArray<string> | undefined } | undefined>
  }
  const closers = new Set<string>()
  const sources = new Map<string, Set<string>>()
  const add = (from: string, to: string) => {
    if (from === START || to === END || from === to) return
    let set = sources.get(to)
    if (set === undefined) sources.set(to, set = new Set())
    set.add(from)
  }
  for (const [from, to] of shape.edges ?? []) add(from, to)
  for (const [starts, to] of shape.waitingEdges ?? []) {
    if (new Set(starts).size >= 2) closers.add(to)
    for (const from of starts) add(from, to)
  }
  for (const [from, named] of Object.entries(shape.branches ?? {})) {
    for (const branch of Object.values(named)) for (const to of Object.values(branch.ends ?? {})) add(from, to)
  }
  for (const [from, node] of Object.entries(shape.nodes ?? {})) {
    if (Array.isArray(node?.ends)) for (const to of node.ends) add(from, to)
  }
  for (const [node, from] of sources) if (from.size >= 2) closers.add(node)
  closersCache.set(graph, closers)
  return closers
}

/** A body's hold on a slot: `held` false while it gave the slot back (see {@link yieldSlot}). */
interface Hold {
  readonly token: object
  readonly slots: SlotsImpl
  readonly depth: number
  readonly signal: AbortSignal
  held: boolean
}

/** Marks the async context of a body that holds a slot: steps of the same pass started inside it run in that slot. */
const holding = new AsyncLocalStorage<Hold>()

/**
 * Runs `wait` without the slot the calling step body holds (a step waiting
 * for its children gives its slot to them), then takes a slot again — first
 * among waiters, as a step closing a branch — before answering. Outside a
 * body that holds a slot it just runs `wait`. If the pass is aborted before
 * the slot comes back, it rejects with the abort reason (the body holds no
 * slot then, and gives none back).
 *
 * @category internal
 * @since 0.1.0
 */
export const yieldSlot = async <A>(wait: () => Promise<A>): Promise<A> => {
  const hold = holding.getStore()
  if (hold === undefined || !hold.held) return wait()
  hold.held = false
  hold.slots.releaseUnsafe()
  let out: A
  try {
    out = await wait()
  } finally {
    const exit = await Effect.runPromiseExit(hold.slots.take({ closesBranch: true, depth: hold.depth, newRoot: false }), { signal: hold.signal })
    if (Exit.isSuccess(exit)) hold.held = true
    else if (hold.signal.aborted) throw hold.signal.reason
  }
  return out
}

/**
 * Told when a pass's first step body took a slot: the claim loop provides it
 * to a claimed child's run, which holds no slot until then (it takes its
 * lease, reads its checkpoint) — so that the loop does not count the slot
 * that child is about to take as free for another claim.
 *
 * @category internal
 * @since 0.1.0
 */
export const FirstSlot = Context.Reference<(() => void) | undefined>("baton/StepSlots/FirstSlot", { defaultValue: () => undefined })

/**
 * How one pass's step bodies take their slots: `undefined` when the instance
 * has no cap (the body runs as before). Otherwise a wrapper that takes a slot
 * for the node's visit, counts the step as parked while it waits (a test
 * harness sees it idle), runs the body in the slot and gives it back once
 * the body settled. A wait ends at once when `signal` aborts: the step
 * leaves the queue and its body never runs.
 *
 * @category internal
 * @since 0.1.0
 */
export const passGate = (instance: InstanceShape, pass: {
  readonly graph: GraphBuilder
  readonly depth: number
  /** The pass starts a new root: its steps are a new root's first until one ends. */
  readonly newRoot: boolean
  /**
   * Set when the pass continues a parent whose children all ended: its next
   * step (the parent's continuation) closes that branch and goes first.
   */
  readonly continuation?: { value: boolean } | undefined
  readonly signal: AbortSignal
  /** Called with +1 when a step starts waiting for a slot and -1 when the wait ends. */
  readonly park: (delta: number) => void
  /** Called each time a body took its slot (see {@link FirstSlot}). */
  readonly tookSlot?: (() => void) | undefined
}): (<A>(node: string, body: () => Promise<A>) => Promise<A>) | undefined => {
  const slots = fromInstance(instance) as SlotsImpl | undefined
  if (slots === undefined) return undefined
  const closers = branchClosers(pass.graph)
  const token = {}
  let firstStep = pass.newRoot
  const held = <A>(body: () => Promise<A>): Promise<A> => {
    const hold: Hold = { token, slots, depth: pass.depth, signal: pass.signal, held: true }
    pass.tookSlot?.()
    let p: Promise<A>
    try {
      p = holding.run(hold, body)
    } catch (e) {
      p = Promise.reject(e)
    }
    return p.finally(() => {
      firstStep = false
      if (hold.held) slots.releaseUnsafe()
    })
  }
  return <A>(node: string, body: () => Promise<A>): Promise<A> => {
    // Inside a body of this pass that holds a slot (a subgraph run by a step): that slot covers this step.
    // (Another execution started from inside a step needs a slot of its own.)
    if (holding.getStore()?.token === token) return body()
    const continues = pass.continuation?.value === true
    if (pass.continuation !== undefined) pass.continuation.value = false
    if (slots.tryTakeUnsafe()) return held(body)
    const { signal } = pass
    if (signal.aborted) return Promise.reject(signal.reason)
    const claim: Claim = { closesBranch: continues || closers.has(node), depth: pass.depth, newRoot: firstStep }
    pass.park(1)
    return Effect.runPromiseExit(slots.wait(claim), { signal }).then((exit) => {
      pass.park(-1)
      if (Exit.isFailure(exit)) throw signal.aborted ? signal.reason : Cause.squash(exit.cause)
      if (!signal.aborted) return held(body)
      // Aborted in the instant the slot arrived: the body does not start.
      slots.releaseUnsafe()
      throw signal.reason
    })
  }
}
