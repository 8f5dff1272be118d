/**
 * A multi-instance harness: N baton instances in one process over one set of
 * built store services and the test's clock, each with its own id, fibers
 * and scope — and a way to kill, freeze or cut off any of them.
 *
 * Time: LangGraph runs on promises Effect's scheduler cannot see, so a bare
 * `TestClock.adjust` can race a step still writing. `advance(d)` first lets
 * every pass reach a wait (on the Clock, on a lease, or done), then moves the
 * clock to each due wake-up of an instance in time order, letting the passes
 * settle again after each one.
 *
 * @since 0.1.0
 */
import { BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type PendingWrite } from "@langchain/langgraph-checkpoint"
import type { RunnableConfig } from "@langchain/core/runnables"
import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { BatonShape } from "../runtime/Baton.ts"
import * as BatonConfig from "../runtime/BatonConfig.ts"
import { ChildQueueStore } from "../stores/ChildQueueStore.ts"
import { CheckpointStore, type CheckpointStoreShape } from "../stores/CheckpointStore.ts"
import { type BatonConfigError, type InvalidInputError, StoreError } from "../stores/Errors.ts"
import { ExecutionHistoryStore } from "../stores/ExecutionHistoryStore.ts"
import { EventStore } from "../stores/EventStore.ts"
import type { IdGenerator } from "../stores/Ids.ts"
import type { InstanceShape } from "../runtime/internal/Instance.ts"
import * as Runtime from "../runtime/internal/Runtime.ts"
import { LeaseStore } from "../stores/LeaseStore.ts"
import { LedgerStore } from "../stores/LedgerStore.ts"
import { PauseStore } from "../stores/PauseStore.ts"
import { RateLimitStore } from "../stores/RateLimitStore.ts"
import { RecordStore } from "../stores/RecordStore.ts"
import { RequestStore } from "../stores/RequestStore.ts"
import { ScheduleStore } from "../stores/ScheduleStore.ts"
import { ConcurrencyKeyStore } from "../stores/ConcurrencyKeyStore.ts"
import { DebounceStore } from "../stores/DebounceStore.ts"
import { TreeStore } from "../stores/TreeStore.ts"
import { TimerStore } from "../stores/TimerStore.ts"
import * as Arguments from "./internal/arguments.ts"

/**
 * What an instance's process is doing, as far as its stores and clock can tell.
 *
 * @category models
 * @since 0.1.0
 */
export type InstanceState = "alive" | "unreachable" | "hanging" | "frozen" | "dead"

/**
 * The stores a harness needs in context.
 *
 * @category models
 * @since 0.1.0
 */
export type HarnessStores = LeaseStore | RecordStore | PauseStore | TreeStore | CheckpointStore | IdGenerator

/**
 * One instance of a harness: its runtime, its state and what its process is doing.
 *
 * @category models
 * @since 0.1.0
 */
export interface HarnessInstance {
  /** Its slot in the harness (`instances[index]`), kept across a `restart`. */
  readonly index: number
  /** Its id: `instance-<index>`, then `instance-<index>.<n>` after the nth restart. */
  readonly instanceId: string
  /** Its `Baton` service; its calls run in the caller's fiber (`Harness.baton` runs them in the instance's). */
  readonly baton: BatonShape
  /** The runtime's internal state of the instance (its passes, health), for assertions of the library's own tests. */
  readonly instance: InstanceShape
  /** What its process is doing now. */
  readonly state: InstanceState
}

/**
 * N baton instances in one process over shared stores, with ways to kill, freeze or cut off any of them.
 * An argument that cannot work (an index no instance has, a non-Effect, a
 * duration that is not one) fails the call with `InvalidInputError` naming it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Harness {
  /** Every instance, by index, as they are now (a restarted slot holds its new instance). */
  readonly instances: ReadonlyArray<HarnessInstance>
  /** The instance `index` names, at once; an index that names none throws `InvalidInputError` (field `index`). */
  readonly instance: (index: number) => HarnessInstance
  /**
   * The `Baton` API of instance `index`, direct: each call runs in a fiber of that
   * instance (as `run` does: it dies, freezes and is cut off with the instance) and
   * answers its result once it is done — no fiber to join:
   * `const handle = yield* h.baton(0).start(workflow, input)`.
   * The instance in the slot is looked up at each call, so the accessor follows a
   * `restart`. A call whose instance is killed meanwhile is interrupted (use `run`
   * to hold its fiber instead). An index that names none throws `InvalidInputError`.
   */
  readonly baton: (index: number) => BatonShape
  /** Runs a call on instance `index` in a fiber of that instance (it dies with the instance); answers the fiber. */
  readonly run: <A, E>(index: number, f: (baton: BatonShape) => Effect.Effect<A, E>) => Effect.Effect<Fiber.Fiber<A, E>, InvalidInputError>
  /**
   * Runs an effect in a fiber of instance `index` over that instance's stores and clock (gated like its
   * runtime's: it dies, freezes and is cut off with the instance), e.g. a `Leader.run` campaign.
   */
  readonly runIn: <A, E>(index: number, effect: Effect.Effect<A, E, HarnessStores>) => Effect.Effect<Fiber.Fiber<A, E>, InvalidInputError>
  /** Abrupt death: no release, every later store call of the instance fails, its fibers stop. */
  readonly kill: (index: number) => Effect.Effect<void, InvalidInputError>
  /**
   * The process stops (SIGSTOP): its store calls and clock wake-ups wait until `thaw`. One still frozen (or
   * hanging) when the harness's scope closes is torn down as dead: its waiting calls fail, nothing waits for it.
   */
  readonly freeze: (index: number) => Effect.Effect<void, InvalidInputError>
  /** The process goes on (SIGCONT): its waiting store calls and clock wake-ups proceed. */
  readonly thaw: (index: number) => Effect.Effect<void, InvalidInputError>
  /** The instance's stores become unreachable (calls fail with `StoreError`) until `reconnect`; its fibers go on. */
  readonly disconnect: (index: number) => Effect.Effect<void, InvalidInputError>
  /** The instance's store calls hang (no answer, no error) until `reconnect`; its clock and fibers go on. */
  readonly hang: (index: number) => Effect.Effect<void, InvalidInputError>
  /** The instance reaches its stores again (after `disconnect` or `hang`): hung calls proceed. */
  readonly reconnect: (index: number) => Effect.Effect<void, InvalidInputError>
  /** Closes the instance's scope: its calls are interrupted and its passes release their leases. */
  readonly close: (index: number) => Effect.Effect<void, InvalidInputError>
  /** A fresh instance (new id) in the slot of a dead or closed one. */
  readonly restart: (index: number) => Effect.Effect<void, BatonConfigError | InvalidInputError>
  /** Waits until every pass of every live instance waits (on the Clock, a lease) or is done. */
  readonly settle: Effect.Effect<void>
  /** Settles, then moves the TestClock by `duration`, waking due waits in time order and settling after each. */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void, InvalidInputError>
}

interface Gate {
  state: InstanceState
  readonly waiters: Set<() => void>
}

const gateError = (index: number, state: InstanceState, operation: string) =>
  new StoreError({
    store: "harness",
    operation,
    reason: state === "dead" ? `instance ${index} is dead` : `the store is unreachable from instance ${index}`,
    kind: "Connection"
  })

/** Blocks while frozen; then fails if dead or unreachable. */
const passGate = (gate: Gate, index: number, operation: string): Effect.Effect<void, StoreError> =>
  Effect.suspend(() => {
    switch (gate.state) {
      case "alive":
        return Effect.void
      case "frozen":
      case "hanging":
        return Effect.callback<void>((resume) => {
          const f = () => resume(Effect.void)
          gate.waiters.add(f)
          return Effect.sync(() => gate.waiters.delete(f))
        }).pipe(Effect.andThen(passGate(gate, index, operation)))
      default:
        return Effect.fail(gateError(index, gate.state, operation))
    }
  })

const gatePromise = (gate: Gate, index: number, operation: string) => Effect.runPromise(passGate(gate, index, operation))

/**
 * A store call of an instance, as `beforeStoreCall` sees it.
 *
 * @category models
 * @since 0.1.0
 */
export interface StoreCall {
  readonly index: number
  /** The service's key and the method, e.g. `baton/TreeStore.saveReservedFenced`. */
  readonly operation: string
  readonly args: ReadonlyArray<unknown>
}

type BeforeStoreCall = (call: StoreCall) => Effect.Effect<void, InvalidInputError>

/** Every method of a store service goes through the hook (if any), then the gate. */
const gateService = <S extends object>(service: S, gate: Gate, index: number, name: string, before: BeforeStoreCall | undefined): S => {
  const out: Record<string, unknown> = {}
  const enter = (operation: string, args: ReadonlyArray<unknown>) =>
    before === undefined ? passGate(gate, index, operation) : Effect.andThen(Effect.orDie(before({ index, operation, args })), passGate(gate, index, operation))
  for (const [k, v] of Object.entries(service)) {
    if (Effect.isEffect(v)) out[k] = Effect.andThen(enter(`${name}.${k}`, []), v)
    else if (typeof v === "function") {
      out[k] = (...args: Array<unknown>) => {
        const r = (v as (...a: Array<unknown>) => unknown)(...args)
        return Effect.isEffect(r) ? Effect.andThen(enter(`${name}.${k}`, args), r) : r
      }
    } else out[k] = v
  }
  return out as S
}

class GatedSaver extends BaseCheckpointSaver {
  readonly inner: BaseCheckpointSaver
  readonly gate: Gate
  readonly index: number
  constructor(inner: BaseCheckpointSaver, gate: Gate, index: number) {
    super(inner.serde)
    this.inner = inner
    this.gate = gate
    this.index = index
  }
  async getTuple(config: RunnableConfig) {
    await gatePromise(this.gate, this.index, "saver.getTuple")
    return this.inner.getTuple(config)
  }
  async *list(config: RunnableConfig, options?: CheckpointListOptions) {
    await gatePromise(this.gate, this.index, "saver.list")
    yield* this.inner.list(config, options)
  }
  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions) {
    await gatePromise(this.gate, this.index, "saver.put")
    return this.inner.put(config, checkpoint, metadata, newVersions)
  }
  async putWrites(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string, taskPath?: string) {
    await gatePromise(this.gate, this.index, "saver.putWrites")
    return this.inner.putWrites(config, writes, taskId, taskPath)
  }
  async deleteThread(threadId: string) {
    await gatePromise(this.gate, this.index, "saver.deleteThread")
    return this.inner.deleteThread(threadId)
  }
  override getNextVersion(current: number | undefined) {
    return this.inner.getNextVersion(current)
  }
}

const storeTags = [LeaseStore, RecordStore, PauseStore, TreeStore, LedgerStore, RateLimitStore, ChildQueueStore, ExecutionHistoryStore, RequestStore, TimerStore, ScheduleStore, EventStore, ConcurrencyKeyStore, DebounceStore] as const

/** The test's clock as one instance sees it: its waits are noted in `deadlines`; a dead one never wakes, a frozen one wakes at thaw. */
const instanceClock = (clock: Clock.Clock, deadlines: Map<symbol, number>, gate: Gate): Clock.Clock => ({
  ...clock,
  sleep: (d) =>
    Effect.suspend(() => {
      const token = Symbol()
      deadlines.set(token, clock.currentTimeMillisUnsafe() + Duration.toMillis(d))
      return clock.sleep(d).pipe(
        Effect.ensuring(Effect.sync(() => deadlines.delete(token))),
        Effect.andThen(Effect.suspend(() =>
          gate.state === "dead" ? Effect.never : gate.state === "frozen" ? passGate(gate, -1, "clock").pipe(Effect.ignore) : Effect.void
        ))
      )
    })
})

/** The shared stores as instance `index` reaches them: every call through its gate, on its clock. */
const gatedContext = (stores: Context.Context<HarnessStores>, clock: Clock.Clock, gate: Gate, index: number, before: BeforeStoreCall | undefined) => {
  let context = Context.make(Clock.Clock, clock) as Context.Context<never>
  for (const tag of storeTags) {
    const service = Context.getOption(stores, tag as never)
    if (service._tag === "Some") context = Context.add(context, tag as never, gateService(service.value as object, gate, index, tag.key, before) as never)
  }
  const checkpoints = Context.get(stores, CheckpointStore)
  const gatedCheckpoints: CheckpointStoreShape = {
    ...gateService(checkpoints, gate, index, "CheckpointStore", before),
    saver: new GatedSaver(checkpoints.saver, gate, index),
    fenced: checkpoints.fenced,
    lifecycle: checkpoints.lifecycle === undefined ? undefined : gateService(checkpoints.lifecycle, gate, index, "CheckpointStore.lifecycle", before)
  }
  context = Context.add(context, CheckpointStore, gatedCheckpoints)
  return Context.merge(stores as Context.Context<never>, context) as Context.Context<HarnessStores>
}

/** Sets a state that lets calls through (or fails them) and resumes the calls waiting at the gate. */
const openGate = (gate: Gate, state: Exclude<InstanceState, "frozen" | "hanging">) => {
  gate.state = state
  // Emptied before the waiters resume: one that runs on at once and waits again (frozen anew by a
  // `beforeStoreCall`) adds itself to the new set, not to the one being cleared.
  const waiting = [...gate.waiters]
  gate.waiters.clear()
  for (const f of waiting) f()
}

interface Slot {
  gate: Gate
  context: Context.Context<HarnessStores>
  scope: Scope.Closeable
  entry: HarnessInstance
}

/** The passes of live instances still moving: not waiting, or with a step body not parked on the Clock. */
const busyPasses = (slots: ReadonlyArray<Slot>) => {
  const busy: Array<string> = []
  for (const s of slots) {
    if (s.gate.state === "frozen" || s.gate.state === "dead" || s.gate.state === "hanging") continue
    for (const p of s.entry.instance.passes.active) {
      const bodiesParked = p.bodies.size > 0 && p.parkedBodies >= p.bodies.size
      const idle = p.phase === "waiting" || (p.phase === "invoking" && bodiesParked && !(p.signal()?.aborted ?? false))
      if (!idle || p.bodies.size > p.parkedBodies) busy.push(`${s.entry.instanceId}:${p.rootExecutionId}:${p.phase}`)
    }
  }
  return busy
}

/** Changes whenever anything moves: a wait noted or ended, a step started or ended, a pass begun or done. */
const signature = (slots: ReadonlyArray<Slot>, deadlines: Map<symbol, number>) => {
  let n = deadlines.size
  for (const s of slots) n = n * 31 + s.entry.instance.passes.progress() + s.entry.instance.passes.active.size
  return n
}

/** Waits (in real time, at most 10 s) until no pass is busy and nothing moved for three turns of the event loop. */
const settleSlots = (slots: ReadonlyArray<Slot>, deadlines: Map<symbol, number>) =>
  Effect.gen(function*() {
    const started = Date.now()
    let last = Number.NaN
    let stable = 0
    while (true) {
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      const busy = busyPasses(slots)
      const sig = signature(slots, deadlines)
      stable = busy.length === 0 && sig === last ? stable + 1 : 0
      last = sig
      if (stable >= 3) return
      if (Date.now() - started > 10_000) {
        return yield* Effect.die(new Error(`harness: passes did not settle within 10 s of real time: ${busy.join(", ")}`))
      }
    }
  })

/** Settles, then moves the TestClock to each due wait in time order up to `duration` ahead, settling after each. */
const advanceBy = (clock: Clock.Clock, deadlines: Map<symbol, number>, settle: Effect.Effect<void>) => (duration: Duration.Input) =>
  Effect.gen(function*() {
    const millis = yield* Arguments.advanceMillis(duration)
    yield* settle
    const target = clock.currentTimeMillisUnsafe() + millis
    while (true) {
      const now = clock.currentTimeMillisUnsafe()
      let next = Infinity
      for (const d of deadlines.values()) if (d < next) next = d
      if (next > target) break
      yield* TestClock.adjust(Math.max(0, next - now))
      yield* settle
    }
    yield* TestClock.adjust(Math.max(0, target - clock.currentTimeMillisUnsafe()))
    yield* settle
  })

/**
 * Builds `instances` baton instances over the store services in context
 * (built once: every instance shares their rows), on the test's clock.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(options: {
  readonly instances: number
  readonly baton: Omit<BatonConfig.BatonOptions, "instanceId">
  /** Options of instance `index` over `baton` (its own workflows, limits, …); also for a restart. */
  readonly instanceOptions?: ((index: number) => Partial<Omit<BatonConfig.BatonOptions, "instanceId">>) | undefined
  /**
   * Runs before each store call of an instance reaches its gate (the checkpoint saver's calls aside): it may
   * freeze, cut off or kill that instance right there — the call then waits or fails at the gate —, e.g. at the
   * moment a child hands its undos over. It runs inside the store call, whose errors are the store's: an
   * `InvalidInputError` of a harness call it makes (a bad index) stops that call's fiber as a defect.
   */
  readonly beforeStoreCall?: ((call: StoreCall) => Effect.Effect<void, InvalidInputError>) | undefined
}): Effect.fn.Return<Harness, BatonConfigError, HarnessStores | Scope.Scope> {
  yield* Arguments.makeOptions(options)
  const stores = yield* Effect.context<HarnessStores>()
  const clock = yield* Clock.Clock
  const harnessScope = yield* Effect.scope
  const deadlines = new Map<symbol, number>()
  let generation = 0

  const slots: Array<Slot> = []
  // The instances' scopes live in one scope closed after the finalizer below: at teardown (a test that
  // ended, or failed, with an instance still frozen or hanging) that instance's process never comes
  // back, so its waiting store calls fail as a dead one's instead of holding its close (and the test's
  // scope) open.
  const instancesScope = yield* Scope.fork(harnessScope)
  yield* Scope.addFinalizer(harnessScope, Effect.sync(() => {
    for (const s of slots) if (s.gate.state === "frozen" || s.gate.state === "hanging") openGate(s.gate, "dead")
  }))

  const build = Effect.fnUntraced(function*(index: number) {
    const gate: Gate = { state: "alive", waiters: new Set() }
    const context = gatedContext(stores, instanceClock(clock, deadlines, gate), gate, index, options.beforeStoreCall)
    const scope = yield* Scope.fork(instancesScope)
    const instanceId = generation === 0 ? `instance-${index}` : `instance-${index}.${generation}`
    const { workflows, ...rest } = { ...options.baton, ...options.instanceOptions?.(index) }
    // The instance's own scope inside the stores' context (which holds the test's scope): its sweep and
    // background fibers live in it, so `close`/`kill` stop them.
    const built = yield* Runtime.make(workflows).pipe(
      Effect.provide(BatonConfig.layer({ ...rest, instanceId })),
      Scope.provide(scope),
      Effect.provide(context)
    )
    const slot: Slot = {
      gate,
      context,
      scope,
      entry: {
        index,
        instanceId,
        baton: built,
        instance: built.instance,
        get state() {
          return gate.state
        }
      }
    }
    slots[index] = slot
  })

  for (let i = 0; i < options.instances; i++) yield* build(i)
  generation++

  const slot = (index: number) => {
    const s = slots[index]
    if (s === undefined) throw new Error(`harness: no instance ${index} (there are ${slots.length})`)
    return s
  }
  /** The slot `index` names, checked (`operation` is the Harness call it was given to). */
  const slotAt = (operation: string, index: number) => Effect.map(Arguments.index(`Harness.${operation}`, index, slots.length), slot)
  const setState = (operation: string, index: number, state: InstanceState) =>
    Effect.map(slotAt(operation, index), ({ gate }) => {
      if (state === "frozen" || state === "hanging") gate.state = state
      else openGate(gate, state)
    })

  const settle = settleSlots(slots, deadlines)
  const advance = advanceBy(clock, deadlines, settle)

  const harness: Harness = {
    get instances() {
      return slots.map((s) => s.entry)
    },
    instance: (index) => {
      // Answers at once: a bad index throws the typed error the other calls fail with.
      const checked = Effect.runSyncExit(slotAt("instance", index))
      if (Exit.isFailure(checked)) throw Cause.squash(checked.cause)
      return checked.value.entry
    },
    baton: (index) => {
      harness.instance(index)
      // Each call (an Effect-valued field or a method answering an Effect) runs in the instance's fiber, joined.
      const onInstance = <A, E>(effect: () => Effect.Effect<A, E>) =>
        Effect.flatMap(Effect.orDie(harness.run(index, () => effect())), Fiber.join)
      const current = () => slot(index).entry.baton as unknown as Record<string, unknown>
      const direct: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(current())) {
        if (Effect.isEffect(value)) {
          Object.defineProperty(direct, key, { enumerable: true, get: () => onInstance(() => current()[key] as Effect.Effect<unknown, unknown>) })
        } else if (typeof value === "function") {
          direct[key] = (...args: Array<unknown>) => {
            const answer = (current()[key] as (...a: Array<unknown>) => unknown)(...args)
            return Effect.isEffect(answer) ? onInstance(() => answer as Effect.Effect<unknown, unknown>) : answer
          }
        } else {
          Object.defineProperty(direct, key, { enumerable: true, get: () => current()[key] })
        }
      }
      return direct as unknown as BatonShape
    },
    run: <A, E>(index: number, f: (baton: BatonShape) => Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const { entry, scope } = yield* slotAt("run", index)
        return yield* Effect.forkIn(yield* Arguments.effectOf<BatonShape, A, E>("Harness.run", f, entry.baton), scope)
      }),
    runIn: <A, E>(index: number, effect: Effect.Effect<A, E, HarnessStores>) =>
      Effect.gen(function*() {
        const { context, scope } = yield* slotAt("runIn", index)
        const checked = yield* Arguments.effect<A, E, HarnessStores>("Harness.runIn", "effect", effect, "an Effect to run on the instance")
        return yield* Effect.forkIn(Effect.provide(checked, context), scope)
      }),
    kill: (index) =>
      Effect.gen(function*() {
        yield* setState("kill", index, "dead")
        // A dead process waits for nothing: its scope closes in the background, interrupting its calls
        // (their passes tell their step bodies to stop; their releases fail at the gate).
        yield* Effect.forkIn(Scope.close(slot(index).scope, Exit.void), harnessScope)
      }),
    freeze: (index) => setState("freeze", index, "frozen"),
    thaw: (index) => setState("thaw", index, "alive"),
    disconnect: (index) => setState("disconnect", index, "unreachable"),
    hang: (index) => setState("hang", index, "hanging"),
    reconnect: (index) => setState("reconnect", index, "alive"),
    close: (index) => Effect.flatMap(slotAt("close", index), ({ scope }) => Scope.close(scope, Exit.void)),
    restart: (index) =>
      Effect.gen(function*() {
        const old = yield* slotAt("restart", index)
        if (old.gate.state !== "dead") yield* Scope.close(old.scope, Exit.void)
        yield* build(index)
        generation++
      }),
    settle,
    advance
  }
  return harness
})
