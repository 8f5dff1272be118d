/**
 * Conformance suite for {@link CheckpointStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import type { RunnableConfig } from "@langchain/core/runnables"
import type { Checkpoint, CheckpointMetadata, CheckpointTuple } from "@langchain/langgraph-checkpoint"
import { Clock, Context, Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { CheckpointStore, type CheckpointStoreShape } from "../../stores/CheckpointStore.ts"
import { LeaseLostError } from "../../stores/Errors.ts"
import { type Fence, fenceKey, tenantConfigKey } from "../../stores/Fence.ts"
import type { Lease } from "../../stores/Lease.ts"
import { LeaseStore, type LeaseStoreShape } from "../../stores/LeaseStore.ts"
import { expectFailure, expectInvalid, now, some, type SuiteOptions } from "./Suite.ts"
import { defineSuite, type InstancesTest } from "./SuiteDefinition.ts"

const leaseTtl = 30_000
/** Different from the lease's own length, so a fenced write's push is visible. */
const fenceTtl = 45_000
/**
 * The fence's renewal period: a fenced write pushes the lease only when its
 * stored expiry is earlier than now + 45 s - 20 s = now + 25 s.
 */
const fenceRenew = 20_000

/**
 * Options of the checkpoint store conformance suite.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointStoreSuiteOptions extends SuiteOptions<CheckpointStore | LeaseStore> {
  /**
   * Whether the store keeps checkpoints per tenant (`configurable[tenantConfigKey]`).
   * Default true. A store made with `CheckpointStores.fromSaver` over a saver
   * that knows no tenants sets false: the tenant-isolation tests are then not
   * registered (such a store needs thread ids unique across tenants).
   */
  readonly tenants?: boolean | undefined
  /**
   * Whether the store offers retention (`CheckpointStoreShape.lifecycle`:
   * `CheckpointRows.listThreads` and `pruneThread`). Default true; a store
   * over a foreign saver, or rows without them, sets false and its
   * retention tests are not registered.
   *
   * @since 0.1.0
   */
  readonly lifecycle?: boolean | undefined
}

interface Both {
  readonly checkpoints: CheckpointStoreShape
  readonly leases: LeaseStoreShape
}

/** What a test's fence saw. */
interface FenceLog {
  /** `[readAt, expiresAt, renewed]` of each fenced write that landed. */
  readonly confirmed: Array<readonly [number, number, boolean]>
  readonly lost: Array<LeaseLostError>
  renewals: number
}

/**
 * Registers the CheckpointStore conformance tests (call it at the top level
 * of a vitest file). The Layer must provide the `LeaseStore` too — the one
 * whose leases the store's fenced writes check.
 *
 * @category conformance
 * @since 0.1.0
 */
export const checkpointStoreSuite = (options: CheckpointStoreSuiteOptions): void => {
  const { ids, register } = defineSuite(options, {
    contract: "CheckpointStore",
    pick: (ctx): Both => ({ checkpoints: Context.get(ctx, CheckpointStore), leases: Context.get(ctx, LeaseStore) }),
    ping: (s) => s.checkpoints.ping
  })
  const tenants = options.tenants ?? true

  const checkpoint = (values: Record<string, unknown>, versions: Record<string, number>): Checkpoint => ({
    v: 4,
    id: ids("checkpoint"),
    ts: "2026-03-01T00:00:00.000Z",
    channel_values: values,
    channel_versions: versions,
    versions_seen: { node: { ...versions } }
  })
  const metadata = (step: number, extra: Record<string, unknown> = {}): CheckpointMetadata =>
    ({ source: "loop", step, parents: {}, ...extra }) as CheckpointMetadata

  const config = (threadId: string, more: Record<string, unknown> = {}): RunnableConfig => ({
    configurable: { thread_id: threadId, checkpoint_ns: "", ...more }
  })

  const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
  const collect = (saver: CheckpointStoreShape["saver"], cfg: RunnableConfig, opts?: Parameters<CheckpointStoreShape["saver"]["list"]>[1]) =>
    promise(async () => {
      const out: Array<CheckpointTuple> = []
      for await (const t of saver.list(cfg, opts)) out.push(t)
      return out
    })
  const rejection = (f: () => Promise<unknown>, what: string) => expectFailure(Effect.tryPromise({ try: f, catch: (e) => e }), what)

  /** A fence over `lease`, reading the test's clock, that records what the saver tells it. */
  const makeFence = Effect.fnUntraced(function*(
    lease: Lease,
    behaviour: { readonly refusal?: LeaseLostError; readonly renew?: () => Promise<void> } = {}
  ) {
    const clock = yield* Clock.Clock
    const log: FenceLog = { confirmed: [], lost: [], renewals: 0 }
    const fence: Fence = {
      lease,
      ttlMillis: fenceTtl,
      renewMillis: fenceRenew,
      now: () => clock.currentTimeMillisUnsafe(),
      refusal: () => behaviour.refusal,
      confirmed: (readAt, expiresAt, renewed) => void log.confirmed.push([readAt, expiresAt, renewed]),
      lost: (error) => void log.lost.push(error),
      renewBeforeWrite: async () => {
        log.renewals++
        await behaviour.renew?.()
      }
    }
    return { fence, log }
  })

  /** A thread with one checkpoint (and a lease on a tree of a fresh tenant). */
  const setup = Effect.fnUntraced(function*(stores: Both) {
    const tenantId = ids("tenant")
    const threadId = ids("thread")
    const root = ids("root")
    const base = checkpoint({ messages: ["hello"], count: 1 }, { messages: 1, count: 1 })
    yield* promise(() =>
      stores.checkpoints.saver.put(config(threadId, { [tenantConfigKey]: tenantId }), base, metadata(0), { messages: 1, count: 1 })
    )
    const lease = some(yield* stores.leases.acquire(tenantId, root, ids("holder"), leaseTtl, yield* now), "acquire the tree's lease")
    const latest = (saver = stores.checkpoints.saver) =>
      promise(() => saver.getTuple(config(threadId, { [tenantConfigKey]: tenantId })))
    return { tenantId, threadId, root, base, lease, latest }
  })

  register((test) => {
    test("the saver round-trips put, putWrites, getTuple and list (seen from the other instance)", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const write = first.checkpoints.saver
      const read = second.checkpoints.saver

      assert.isUndefined(yield* promise(() => read.getTuple(cfg())), "no checkpoint yet")
      const cp1 = checkpoint({ messages: ["hello"], count: 1 }, { messages: 1, count: 1 })
      const saved1 = yield* promise(() => write.put(cfg(), cp1, metadata(0), { messages: 1, count: 1 }))
      assert.deepStrictEqual(saved1.configurable, { thread_id: threadId, checkpoint_ns: "", checkpoint_id: cp1.id })

      const t1 = yield* promise(() => read.getTuple(cfg()))
      assert.isDefined(t1)
      assert.strictEqual(t1!.checkpoint.id, cp1.id)
      assert.deepStrictEqual(t1!.checkpoint.channel_values, cp1.channel_values)
      assert.deepStrictEqual(t1!.checkpoint.channel_versions, cp1.channel_versions)
      assert.deepStrictEqual(t1!.metadata, metadata(0))
      assert.deepStrictEqual(t1!.pendingWrites, [])
      assert.isUndefined(t1!.parentConfig)

      yield* promise(() => write.putWrites(cfg({ checkpoint_id: cp1.id }), [["messages", "from task"], ["count", 2]], "task1"))
      const t1w = yield* promise(() => read.getTuple(cfg({ checkpoint_id: cp1.id })))
      assert.deepStrictEqual(t1w!.pendingWrites, [["task1", "messages", "from task"], ["task1", "count", 2]])

      const cp2 = checkpoint({ messages: ["hello"], count: 2 }, { messages: 1, count: 2 })
      yield* promise(() => write.put(cfg({ checkpoint_id: cp1.id }), cp2, metadata(1, { note: "second" }), { count: 2 }))
      const t2 = yield* promise(() => read.getTuple(cfg()))
      assert.strictEqual(t2!.checkpoint.id, cp2.id, "getTuple without an id answers the newest")
      assert.deepStrictEqual(t2!.checkpoint.channel_values, { messages: ["hello"], count: 2 }, "unchanged channels carry over")
      assert.deepStrictEqual(t2!.metadata, metadata(1, { note: "second" }))
      assert.strictEqual(t2!.parentConfig?.configurable?.checkpoint_id, cp1.id)
      assert.deepStrictEqual(t2!.pendingWrites, [])
      const t1again = yield* promise(() => read.getTuple(cfg({ checkpoint_id: cp1.id })))
      assert.strictEqual(t1again!.checkpoint.id, cp1.id, "an older checkpoint by id")
      assert.deepStrictEqual(t1again!.checkpoint.channel_values, { messages: ["hello"], count: 1 })

      const listed = yield* collect(read, cfg())
      assert.deepStrictEqual(listed.map((t) => t.checkpoint.id), [cp2.id, cp1.id], "list: newest first")
      assert.deepStrictEqual((yield* collect(read, cfg(), { limit: 1 })).map((t) => t.checkpoint.id), [cp2.id])
      assert.deepStrictEqual(
        (yield* collect(read, cfg(), { before: { configurable: { checkpoint_id: cp2.id } } })).map((t) => t.checkpoint.id),
        [cp1.id]
      )
      assert.deepStrictEqual((yield* collect(read, cfg(), { filter: { note: "second" } })).map((t) => t.checkpoint.id), [cp2.id])

      // another namespace of the same thread is another line of checkpoints
      const sub = checkpoint({ inner: true }, { inner: 1 })
      yield* promise(() => write.put(cfg({ checkpoint_ns: "child:1" }), sub, metadata(0), { inner: 1 }))
      assert.strictEqual((yield* promise(() => read.getTuple(cfg())))!.checkpoint.id, cp2.id)
      assert.strictEqual((yield* promise(() => read.getTuple(cfg({ checkpoint_ns: "child:1" }))))!.checkpoint.id, sub.id)

      yield* second.checkpoints.deleteThread(tenantId, threadId)
      assert.isUndefined(yield* promise(() => read.getTuple(cfg())), "deleteThread removes the thread's checkpoints")
      assert.deepStrictEqual(yield* collect(read, cfg()), [])
    })

    test("list reads many checkpoints (more than a batch, two namespaces) each with its own values and pending writes", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const expected = new Map<string, { readonly values: Record<string, unknown>; readonly writes: ReadonlyArray<unknown> }>()
      for (const ns of ["", "sub:1"]) {
        let parent: string | undefined
        for (let step = 0; step < 60; step++) {
          // "fixed" changes only at step 0: later checkpoints read the same blob.
          const values = { fixed: `${ns}-fixed`, count: step, ...(step % 7 === 0 ? { extra: [ns, step] } : {}) }
          const versions = { fixed: 1, count: step + 1, ...(step % 7 === 0 ? { extra: step + 1 } : {}) }
          const cp = checkpoint(values, versions)
          const changed = step === 0 ? versions : { count: step + 1, ...(step % 7 === 0 ? { extra: step + 1 } : {}) }
          yield* promise(() => first.checkpoints.saver.put(cfg({ checkpoint_ns: ns, checkpoint_id: parent }), cp, metadata(step, { ns }), changed))
          const writes = step % 3 === 0 ? [] : [["task-b", "count", step * 10], ["task-a", "note", `${ns}/${step}`]]
          if (writes.length > 0) {
            yield* promise(() => first.checkpoints.saver.putWrites(cfg({ checkpoint_ns: ns, checkpoint_id: cp.id }), [[writes[0]![1] as string, writes[0]![2]]], "task-b"))
            yield* promise(() => first.checkpoints.saver.putWrites(cfg({ checkpoint_ns: ns, checkpoint_id: cp.id }), [[writes[1]![1] as string, writes[1]![2]]], "task-a"))
          }
          expected.set(cp.id, {
            values,
            writes: writes.length === 0 ? [] : [["task-a", "note", `${ns}/${step}`], ["task-b", "count", step * 10]]
          })
          parent = cp.id
        }
      }
      // The whole thread (both namespaces) and each namespace alone, with and without a limit.
      const wholeThread: RunnableConfig = { configurable: { thread_id: threadId, [tenantConfigKey]: tenantId } }
      for (const [listConfig, size] of [[wholeThread, 120], [cfg({ checkpoint_ns: "sub:1" }), 60], [cfg({ checkpoint_ns: "" }), 60]] as const) {
        const listed = yield* collect(second.checkpoints.saver, listConfig)
        assert.strictEqual(listed.length, size)
        for (const ns of ["", "sub:1"]) {
          const ofNs = listed.filter((t) => t.config.configurable?.checkpoint_ns === ns).map((t) => t.checkpoint.id)
          assert.deepStrictEqual(ofNs, [...ofNs].sort().reverse(), "newest first (within a namespace)")
        }
        for (const t of listed) {
          const want = expected.get(t.checkpoint.id)!
          assert.deepStrictEqual(t.checkpoint.channel_values, want.values, `values of ${t.checkpoint.id}`)
          assert.deepStrictEqual(t.pendingWrites, want.writes, `pending writes of ${t.checkpoint.id}`)
          assert.strictEqual(t.config.configurable?.checkpoint_ns, (t.metadata as Record<string, unknown>).ns)
        }
        // Each tuple owns its values: changing one changes no other.
        ;(listed[1]!.checkpoint.channel_values.fixed as unknown) = "changed"
        assert.notStrictEqual(listed[2]!.checkpoint.channel_values.fixed, "changed")
      }
      const limited = yield* collect(second.checkpoints.saver, cfg({ checkpoint_ns: "" }), { limit: 55 })
      assert.strictEqual(limited.length, 55)
      const filtered = yield* collect(second.checkpoints.saver, wholeThread, { filter: { ns: "sub:1" }, limit: 52 })
      assert.strictEqual(filtered.length, 52)
      assert.isTrue(filtered.every((t) => t.config.configurable?.checkpoint_ns === "sub:1"))
    })

    if (tenants) {
      test("checkpoints are isolated by tenant: the same thread id under two tenants is two threads", function*({ first, second }) {
        const threadId = ids("thread")
        const [a, b, c] = [ids("tenant"), ids("tenant"), ids("tenant")]
        const ofTenant = (tenantId: string, more: Record<string, unknown> = {}) => config(threadId, { [tenantConfigKey]: tenantId, ...more })
        const cpA = checkpoint({ owner: "a" }, { owner: 1 })
        const cpB = checkpoint({ owner: "b" }, { owner: 1 })
        yield* promise(() => first.checkpoints.saver.put(ofTenant(a), cpA, metadata(0), { owner: 1 }))
        yield* promise(() => second.checkpoints.saver.put(ofTenant(b), cpB, metadata(0), { owner: 1 }))
        yield* promise(() => first.checkpoints.saver.putWrites(ofTenant(a, { checkpoint_id: cpA.id }), [["owner", "a-write"]], "t"))
        const read = second.checkpoints.saver
        const tA = yield* promise(() => read.getTuple(ofTenant(a)))
        const tB = yield* promise(() => read.getTuple(ofTenant(b)))
        assert.strictEqual(tA!.checkpoint.id, cpA.id)
        assert.deepStrictEqual(tA!.checkpoint.channel_values, { owner: "a" })
        assert.deepStrictEqual(tA!.pendingWrites, [["t", "owner", "a-write"]])
        assert.strictEqual(tB!.checkpoint.id, cpB.id)
        assert.deepStrictEqual(tB!.checkpoint.channel_values, { owner: "b" })
        assert.deepStrictEqual(tB!.pendingWrites, [], "tenant a's writes are not b's")
        assert.isUndefined(yield* promise(() => read.getTuple(ofTenant(c))), "a third tenant sees nothing")
        assert.isUndefined(yield* promise(() => read.getTuple(ofTenant(b, { checkpoint_id: cpA.id }))), "not even by id")
        assert.isUndefined(yield* promise(() => read.getTuple(config(threadId))), "nor the default tenant")
        assert.deepStrictEqual((yield* collect(read, ofTenant(b))).map((t) => t.checkpoint.id), [cpB.id])
        assert.deepStrictEqual(yield* collect(read, ofTenant(c)), [])
        yield* first.checkpoints.deleteThread(b, threadId)
        assert.isUndefined(yield* promise(() => read.getTuple(ofTenant(b))))
        assert.strictEqual((yield* promise(() => read.getTuple(ofTenant(a))))!.checkpoint.id, cpA.id, "deleteThread of b keeps a's")
      })
    }

    test("a write under a current lease succeeds; a fenced store pushes the lease, an unfenced saver renews first", function*(stores) {
      const { first, second } = stores
      const s = yield* setup(first)
      yield* TestClock.adjust(10_000)
      const t = yield* now
      const seenAtRenewal: Array<string | undefined> = []
      const { fence, log } = yield* makeFence(s.lease, {
        renew: async () => {
          const latest = await second.checkpoints.saver.getTuple(config(s.threadId, { [tenantConfigKey]: s.tenantId }))
          seenAtRenewal.push(latest?.checkpoint.id)
        }
      })
      const fenced = (more: Record<string, unknown> = {}) => config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: fence, ...more })
      const next = checkpoint({ messages: ["hello", "again"], count: 1 }, { messages: 2, count: 1 })
      yield* promise(() => first.checkpoints.saver.put(fenced({ checkpoint_id: s.base.id }), next, metadata(1), { messages: 2 }))
      yield* promise(() => first.checkpoints.saver.putWrites(fenced({ checkpoint_id: next.id }), [["count", 5]], "task"))
      const latest = yield* s.latest(second.checkpoints.saver)
      assert.strictEqual(latest!.checkpoint.id, next.id, "the write is stored")
      assert.deepStrictEqual(latest!.pendingWrites, [["task", "count", 5]])
      assert.deepStrictEqual(log.lost, [])
      const stored = some(yield* second.leases.get(s.tenantId, s.root), "the lease")
      if (first.checkpoints.fenced) {
        // A renewal was due at the put (the stored expiry, t + 20 s, is earlier than t + 45 s - 20 s); not at the putWrites after it.
        assert.strictEqual(stored.expiresAt, t + fenceTtl, "the fenced write pushed the lease to now + fence ttl")
        assert.strictEqual(stored.epoch, s.lease.epoch)
        assert.deepStrictEqual(
          log.confirmed,
          [[t, t + fenceTtl, true], [t, t + fenceTtl, false]],
          "each write confirmed the lease: the put renewed it, the putWrites found it renewed"
        )
        assert.strictEqual(log.renewals, 0, "a fenced store needs no separate renewal")
      } else {
        assert.strictEqual(log.renewals, 2, "one renewal before each write")
        assert.deepStrictEqual(seenAtRenewal, [s.base.id, next.id], "each renewal ran before its write")
      }
    })

    test("a fenced write leaves the lease as it is until a renewal is due, then pushes it (an unfenced saver renews before each)", function*({ first, second }) {
      const s = yield* setup(first)
      const acquiredAt = s.lease.expiresAt - leaseTtl
      const { fence, log } = yield* makeFence(s.lease)
      const fenced = (more: Record<string, unknown> = {}) => config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: fence, ...more })
      let parent = s.base.id
      let step = 0
      /** A put and a putWrites under the fence, now; answers the lease as stored after them. */
      const writeBoth = Effect.gen(function*() {
        step++
        const next = checkpoint({ messages: ["hello"], count: step }, { messages: 1, count: step + 1 })
        yield* promise(() => first.checkpoints.saver.put(fenced({ checkpoint_id: parent }), next, metadata(step), { count: step + 1 }))
        yield* promise(() => first.checkpoints.saver.putWrites(fenced({ checkpoint_id: next.id }), [["count", step]], `task-${step}`))
        parent = next.id
        const latest = yield* s.latest(second.checkpoints.saver)
        assert.strictEqual(latest!.checkpoint.id, next.id, "the write landed")
        assert.deepStrictEqual(latest!.pendingWrites, [[`task-${step}`, "count", step]])
        return some(yield* second.leases.get(s.tenantId, s.root), "the lease")
      })
      // Not due while the stored expiry (acquire + 30 s) is at least now + 45 s - 20 s: up to acquire + 5 s, included.
      yield* TestClock.adjust(1_000)
      const t1 = yield* now
      const atOne = yield* writeBoth
      yield* TestClock.adjust(4_000)
      const t2 = yield* now
      const atFive = yield* writeBoth
      // Due 1 ms later: the put pushes it; the putWrites at the same instant finds it pushed.
      yield* TestClock.adjust(1)
      const t3 = yield* now
      const afterDue = yield* writeBoth
      // Not due again until 20 s after that push.
      yield* TestClock.adjust(fenceRenew)
      const t4 = yield* now
      const atTwenty = yield* writeBoth
      yield* TestClock.adjust(1)
      const t5 = yield* now
      const afterTwenty = yield* writeBoth
      if (first.checkpoints.fenced) {
        assert.strictEqual(t2, acquiredAt + 5_000)
        assert.deepStrictEqual(atOne, s.lease, "a write 1 s after the acquire does not touch the lease")
        assert.deepStrictEqual(atFive, s.lease, "nor one at exactly the last instant it is not due")
        assert.deepStrictEqual(afterDue, { ...s.lease, expiresAt: t3 + fenceTtl }, "a due write pushes it to now + fence ttl, same epoch")
        assert.deepStrictEqual(atTwenty, afterDue, "not due again renewal-period later to the millisecond")
        assert.deepStrictEqual(afterTwenty, { ...s.lease, expiresAt: t5 + fenceTtl }, "due 1 ms after it")
        assert.deepStrictEqual(log.confirmed, [
          [t1, s.lease.expiresAt, false],
          [t1, s.lease.expiresAt, false],
          [t2, s.lease.expiresAt, false],
          [t2, s.lease.expiresAt, false],
          [t3, t3 + fenceTtl, true],
          [t3, t3 + fenceTtl, false],
          [t4, t3 + fenceTtl, false],
          [t4, t3 + fenceTtl, false],
          [t5, t5 + fenceTtl, true],
          [t5, t5 + fenceTtl, false]
        ], "every write confirmed the lease's stored expiry; only the due ones renewed")
        assert.deepStrictEqual(log.lost, [])
        assert.strictEqual(log.renewals, 0)
      } else {
        assert.strictEqual(log.renewals, 10, "an unfenced saver renews before every write, due or not")
        assert.deepStrictEqual(log.confirmed, [])
      }
    })

    test("a write under a stale epoch (another holder took the lease) writes nothing and fails with LeaseLostError", function*({ first, second }) {
      const s = yield* setup(first)
      yield* TestClock.adjust(leaseTtl)
      const taken = some(yield* second.leases.acquire(s.tenantId, s.root, ids("holder"), leaseTtl, yield* now), "takeover")
      assert.strictEqual(taken.epoch, s.lease.epoch + 1)
      // the runtime's renewal would answer false now: an unfenced saver's renewBeforeWrite rejects
      const lostByRenewal = new LeaseLostError({ ...s.lease, reason: "renewal answered false" })
      const { fence, log } = yield* makeFence(s.lease, {
        renew: () => Promise.reject(lostByRenewal)
      })
      const stale = (more: Record<string, unknown>) => config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: fence, ...more })
      const next = checkpoint({ messages: ["overwritten"], count: 9 }, { messages: 2, count: 2 })
      const e1 = yield* rejection(
        () => first.checkpoints.saver.put(stale({ checkpoint_id: s.base.id }), next, metadata(1), { messages: 2, count: 2 }),
        "put under a stale epoch"
      )
      const e2 = yield* rejection(
        () => second.checkpoints.saver.putWrites(stale({ checkpoint_id: s.base.id }), [["count", 99]], "task"),
        "putWrites under a stale epoch"
      )
      for (const e of [e1, e2]) assert.instanceOf(e, LeaseLostError)
      const latest = yield* s.latest()
      assert.strictEqual(latest!.checkpoint.id, s.base.id, "the stale put wrote nothing")
      assert.deepStrictEqual(latest!.checkpoint.channel_values, s.base.channel_values)
      assert.deepStrictEqual(latest!.pendingWrites, [], "the stale putWrites wrote nothing")
      assert.deepStrictEqual(some(yield* first.leases.get(s.tenantId, s.root), "lease"), taken, "the new holder's lease is untouched")
      if (first.checkpoints.fenced) {
        assert.strictEqual(log.lost.length, 2, "fence.lost is told of each refused write")
        for (const e of log.lost) {
          assert.instanceOf(e, LeaseLostError)
          assert.strictEqual(e.epoch, s.lease.epoch)
        }
        assert.deepStrictEqual(log.confirmed, [])
        assert.strictEqual(log.renewals, 0)
      } else {
        assert.strictEqual(log.renewals, 2, "each write asked for a renewal first")
        assert.strictEqual(e1, lostByRenewal)
      }
    })

    test("a fenced write under a lease that expired or was released writes nothing", function*({ first }) {
      const s = yield* setup(first)
      const { fence, log } = yield* makeFence(s.lease, {
        renew: () => Promise.reject(new LeaseLostError({ ...s.lease, reason: "renewal answered false" }))
      })
      const cfg = config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: fence, checkpoint_id: s.base.id })
      // expired at exactly expiresAt, nobody took it over
      yield* TestClock.adjust(leaseTtl)
      const e1 = yield* rejection(
        () => first.checkpoints.saver.put(cfg, checkpoint({ late: true }, { late: 1 }), metadata(1), { late: 1 }),
        "put under an expired lease"
      )
      assert.instanceOf(e1, LeaseLostError)
      assert.strictEqual((yield* s.latest())!.checkpoint.id, s.base.id)
      // released
      const again = some(yield* first.leases.acquire(s.tenantId, s.root, s.lease.holder, leaseTtl, yield* now), "re-acquire")
      assert.isTrue(yield* first.leases.release(again))
      const released = yield* makeFence(again, {
        renew: () => Promise.reject(new LeaseLostError({ ...again, reason: "released" }))
      })
      const e2 = yield* rejection(
        () =>
          first.checkpoints.saver.putWrites(
            config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: released.fence, checkpoint_id: s.base.id }),
            [["late", 1]],
            "task"
          ),
        "putWrites under a released lease"
      )
      assert.instanceOf(e2, LeaseLostError)
      assert.deepStrictEqual((yield* s.latest())!.pendingWrites, [])
      if (first.checkpoints.fenced) {
        assert.strictEqual(log.lost.length + released.log.lost.length, 2)
        assert.isTrue(Option.isNone(yield* first.leases.get(s.tenantId, s.root)), "a refused write does not revive a released lease")
      } else {
        assert.strictEqual(log.renewals + released.log.renewals, 2)
      }
    })

    test("a write the fence refuses locally reaches no store and writes nothing", function*({ first }) {
      const s = yield* setup(first)
      const refusal = new LeaseLostError({ ...s.lease, reason: "confirmed time ran out" })
      const { fence, log } = yield* makeFence(s.lease, { refusal })
      const cfg = config(s.threadId, { [tenantConfigKey]: s.tenantId, [fenceKey]: fence, checkpoint_id: s.base.id })
      const before = some(yield* first.leases.get(s.tenantId, s.root), "lease")
      yield* TestClock.adjust(1_000)
      assert.strictEqual(
        yield* rejection(() => first.checkpoints.saver.put(cfg, checkpoint({ x: 1 }, { x: 1 }), metadata(1), { x: 1 }), "refused put"),
        refusal
      )
      assert.strictEqual(yield* rejection(() => first.checkpoints.saver.putWrites(cfg, [["x", 1]], "task"), "refused putWrites"), refusal)
      const latest = yield* s.latest()
      assert.strictEqual(latest!.checkpoint.id, s.base.id)
      assert.deepStrictEqual(latest!.pendingWrites, [])
      assert.deepStrictEqual(some(yield* first.leases.get(s.tenantId, s.root), "lease"), before, "the lease was not pushed")
      assert.strictEqual(log.renewals, 0)
      assert.deepStrictEqual(log.confirmed, [])
    })

    test("bad input: deleteThread fails with InvalidInputError naming the argument; a put without a thread id writes nothing", function*({ first }) {
      const s = yield* setup(first)
      yield* expectInvalid(first.checkpoints.deleteThread("", s.threadId), "tenantId", "deleteThread, empty tenant")
      yield* expectInvalid(first.checkpoints.deleteThread(s.tenantId, ""), "threadId", "deleteThread, empty thread")
      assert.strictEqual((yield* s.latest())!.checkpoint.id, s.base.id, "no bad deleteThread deleted anything")
      yield* rejection(
        () => first.checkpoints.saver.put({ configurable: { [tenantConfigKey]: s.tenantId } }, checkpoint({}, {}), metadata(0), {}),
        "put without thread_id"
      )
      yield* rejection(
        () => first.checkpoints.saver.putWrites({ configurable: { thread_id: s.threadId, [tenantConfigKey]: s.tenantId } }, [["x", 1]], "t"),
        "putWrites without checkpoint_id"
      )
      const latest = yield* s.latest()
      assert.strictEqual(latest!.checkpoint.id, s.base.id)
      assert.deepStrictEqual(latest!.pendingWrites, [])
    })

    if (options.lifecycle ?? true) lifecycleTests(test)
  })

  /** A new tenant and thread, and the config of a call on them (with more `configurable` fields). */
  const freshThread = () => {
    const tenantId = ids("tenant")
    const threadId = ids("thread")
    return { tenantId, threadId, cfg: (more: Record<string, unknown> = {}) => config(threadId, { [tenantConfigKey]: tenantId, ...more }) }
  }

  /** A line of `n` checkpoints in `ns` (ids `<prefix>-0000`…, each the parent of the next), `count` changing every step, `fixed` never; writes on each. */
  const line = Effect.fnUntraced(function*(saver: CheckpointStoreShape["saver"], cfg: (more?: Record<string, unknown>) => RunnableConfig, ns: string, n: number) {
    let parent: string | undefined
    const written: Array<string> = []
    for (let i = 0; i < n; i++) {
      const id = `${ns === "" ? "root" : ns}-${String(i).padStart(4, "0")}`
      const versions = { fixed: 1, count: i + 1 }
      const cp: Checkpoint = { ...checkpoint({ fixed: "kept", count: i }, versions), id }
      const at = cfg({ checkpoint_ns: ns, ...(parent === undefined ? {} : { checkpoint_id: parent }) })
      yield* promise(() => saver.put(at, cp, metadata(i), i === 0 ? versions : { count: i + 1 }))
      yield* promise(() => saver.putWrites(cfg({ checkpoint_ns: ns, checkpoint_id: id }), [["count", i + 100]], `task-${i}`))
      parent = id
      written.push(id)
    }
    return written
  })

  const lifecycleTests = (test: InstancesTest<Both>) => {
    const lifecycleOf = (stores: Both) => {
      assert.isDefined(stores.checkpoints.lifecycle, "the store offers retention (CheckpointStoreShape.lifecycle)")
      return stores.checkpoints.lifecycle!
    }

    test("pruneThread keeps the keepLast newest of each namespace, with their writes and every blob they name (read from the other instance)", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const root = yield* line(first.checkpoints.saver, cfg, "", 6)
      const sub = yield* line(first.checkpoints.saver, cfg, "sub:1", 3)
      const pruned = yield* lifecycleOf(second).pruneThread(tenantId, threadId, { keepLast: 2 }, 100)
      assert.deepStrictEqual(pruned, { checkpoints: 4 + 1, writes: 4 + 1, blobs: 4 + 1, more: false }, "4 + 1 checkpoints, one write and one `count` blob each")
      const read = second.checkpoints.saver
      assert.deepStrictEqual((yield* collect(read, cfg())).map((t) => t.checkpoint.id), [root[5], root[4]], "the two newest of the root namespace")
      assert.deepStrictEqual((yield* collect(read, cfg({ checkpoint_ns: "sub:1" }))).map((t) => t.checkpoint.id), [sub[2], sub[1]])
      const kept = yield* promise(() => read.getTuple(cfg({ checkpoint_id: root[4] })))
      assert.deepStrictEqual(kept!.checkpoint.channel_values, { fixed: "kept", count: 4 }, "a blob written with the first checkpoint is still read")
      assert.deepStrictEqual(kept!.pendingWrites, [["task-4", "count", 104]])
      assert.isUndefined(yield* promise(() => read.getTuple(cfg({ checkpoint_id: root[3] }))), "a pruned one is gone")
      assert.deepStrictEqual(yield* lifecycleOf(first).pruneThread(tenantId, threadId, { keepLast: 2 }, 100), { checkpoints: 0, writes: 0, blobs: 0, more: false }, "nothing left to prune")
    })

    test("pruneThread stops at its limit and says so; never deletes the newest of a namespace; by age only what is older", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const root = yield* line(first.checkpoints.saver, cfg, "", 5)
      const lifecycle = lifecycleOf(second)
      const firstBatch = yield* lifecycle.pruneThread(tenantId, threadId, { keepLast: 1 }, 3)
      assert.strictEqual(firstBatch.checkpoints, 3)
      assert.isTrue(firstBatch.more, "one more is due")
      const rest = yield* lifecycle.pruneThread(tenantId, threadId, { keepLast: 1 }, 3)
      assert.strictEqual(rest.checkpoints, 1)
      assert.isTrue(rest.more, "no checkpoint is due, but 4 unnamed blobs are: 3 went with it (its limit)")
      const last = yield* lifecycle.pruneThread(tenantId, threadId, { keepLast: 1 }, 3)
      assert.deepStrictEqual([last.checkpoints, last.blobs, last.more], [0, 1, false], "the last blob, then nothing is due")
      assert.deepStrictEqual((yield* collect(second.checkpoints.saver, cfg())).map((t) => t.checkpoint.id), [root[4]])
      // Written without a fence: created at the checkpoints' own timestamp (ts, 2026-03-01).
      const other = ids("thread")
      const otherCfg = (more: Record<string, unknown> = {}) => config(other, { [tenantConfigKey]: tenantId, ...more })
      const olds = yield* line(first.checkpoints.saver, otherCfg, "", 3)
      const ts = Date.parse("2026-03-01T00:00:00.000Z")
      assert.strictEqual((yield* lifecycle.pruneThread(tenantId, other, { createdBefore: ts }, 100)).checkpoints, 0, "none is older than its own time")
      assert.strictEqual((yield* lifecycle.pruneThread(tenantId, other, { createdBefore: ts + 1 }, 100)).checkpoints, 2, "all but the newest")
      assert.deepStrictEqual((yield* collect(first.checkpoints.saver, otherCfg())).map((t) => t.checkpoint.id), [olds[2]])
      assert.deepStrictEqual((yield* promise(() => first.checkpoints.saver.getTuple(otherCfg())))!.checkpoint.channel_values, { fixed: "kept", count: 2 })
    })

    test("pruneThread deletes at most limit blobs a batch too, and says more until the last is gone", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const root = yield* line(first.checkpoints.saver, cfg, "", 6)
      const lifecycle = lifecycleOf(second)
      const batches: Array<{ checkpoints: number; blobs: number; more: boolean }> = []
      for (let i = 0; i < 20; i++) {
        const { checkpoints, blobs, more } = yield* lifecycle.pruneThread(tenantId, threadId, { keepLast: 1 }, 2)
        batches.push({ checkpoints, blobs, more })
        if (!more) break
      }
      assert.isFalse(batches[batches.length - 1]!.more, `the prune ended (${JSON.stringify(batches)})`)
      for (const b of batches) assert.isAtMost(Math.max(b.checkpoints, b.blobs), 2, `no batch over its limit (${JSON.stringify(batches)})`)
      assert.strictEqual(batches.reduce((n, b) => n + b.checkpoints, 0), 5, "every checkpoint but the newest")
      assert.strictEqual(batches.reduce((n, b) => n + b.blobs, 0), 5, "the `count` blob of each pruned one, over several batches")
      assert.deepStrictEqual((yield* promise(() => first.checkpoints.saver.getTuple(cfg())))!.checkpoint.channel_values, { fixed: "kept", count: 5 })
      assert.deepStrictEqual((yield* collect(first.checkpoints.saver, cfg())).map((t) => t.checkpoint.id), [root[5]])
      assert.deepStrictEqual(yield* lifecycle.pruneThread(tenantId, threadId, { keepLast: 1 }, 2), { checkpoints: 0, writes: 0, blobs: 0, more: false }, "nothing left")
    })

    test("pruneThread keeps every blob a kept checkpoint names when they are many (420 kept, each with its own version)", function*({ first, second }) {
      const { tenantId, threadId, cfg } = freshThread()
      const root = yield* line(first.checkpoints.saver, cfg, "", 440)
      let checkpoints = 0
      let blobs = 0
      for (let more = true, i = 0; more && i < 10; i++) {
        const pruned = yield* lifecycleOf(second).pruneThread(tenantId, threadId, { keepLast: 420 }, 100)
        checkpoints += pruned.checkpoints
        blobs += pruned.blobs
        more = pruned.more
      }
      assert.deepStrictEqual([checkpoints, blobs], [20, 20], "the 20 oldest and the `count` blob each named alone")
      const read = first.checkpoints.saver
      for (const at of [root[20]!, root[200]!, root[439]!]) {
        const kept = yield* promise(() => read.getTuple(cfg({ checkpoint_id: at })))
        assert.deepStrictEqual(kept!.checkpoint.channel_values, { fixed: "kept", count: root.indexOf(at) }, `every blob of ${at} is still read`)
      }
      assert.isUndefined(yield* promise(() => read.getTuple(cfg({ checkpoint_id: root[19] }))), "a pruned one is gone")
    })

    test("listThreads pages the (tenant, thread) pairs holding checkpoints in order; a prune is tenant-scoped", function*({ first, second }) {
      const threadId = ids("thread")
      const [a, b] = [ids("tenant"), ids("tenant")].sort()
      for (const tenantId of [a, b]) {
        yield* line(first.checkpoints.saver, (more = {}) => config(threadId, { [tenantConfigKey]: tenantId, ...more }), "", 3)
      }
      const lifecycle = lifecycleOf(second)
      const seen: Array<{ tenantId: string; threadId: string }> = []
      let after: { tenantId: string; threadId: string } | undefined
      while (true) {
        const page = yield* lifecycle.listThreads(after, 2)
        seen.push(...page)
        if (page.length < 2) break
        after = page[page.length - 1]
      }
      const ours = seen.filter((k) => k.threadId === threadId && (k.tenantId === a || k.tenantId === b)).map((k) => k.tenantId)
      assert.deepStrictEqual(ours, [a, b], "each pair once, in (tenant, thread) order")
      const ascending = seen.every((k, i) =>
        i === 0 || seen[i - 1]!.tenantId < k.tenantId || (seen[i - 1]!.tenantId === k.tenantId && seen[i - 1]!.threadId < k.threadId)
      )
      assert.isTrue(ascending, "the pages come in (tenant, thread) order, each pair once")
      assert.strictEqual((yield* lifecycle.pruneThread(a, threadId, { keepLast: 1 }, 100)).checkpoints, 2)
      const ofB = yield* collect(first.checkpoints.saver, config(threadId, { [tenantConfigKey]: b }))
      assert.strictEqual(ofB.length, 3, "tenant b's thread of the same id is untouched")
      yield* expectInvalid(lifecycle.pruneThread("", threadId, { keepLast: 1 }, 100), "tenantId", "pruneThread, empty tenant")
    })
  }
}
