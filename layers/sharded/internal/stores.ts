/**
 * Every store contract over the shards: each call that names a tenant goes
 * to that tenant's shard; each call that names none is answered as its
 * module doc says (`ShardedStores`): a sweep or claim of due work over every
 * shard (or the one shard of `Router.within`), a fleet-wide rate-limit key on
 * the home shard, a health check on every shard.
 */
import type { StoreServices } from "../../../src/stores/StoreServices.ts"
import { Context, Effect, Exit, Option } from "effect"
import { type CheckpointLifecycle, CheckpointStore, type CheckpointStoreShape } from "../../../src/stores/CheckpointStore.ts"
import { ChildQueueStore, type ChildQueueStoreShape } from "../../../src/stores/ChildQueueStore.ts"
import { ConcurrencyKeyStore, type ConcurrencyKeyStoreShape, type KeyEntry } from "../../../src/stores/ConcurrencyKeyStore.ts"
import { DebounceStore, type DebounceStoreShape, type DebounceWindow } from "../../../src/stores/DebounceStore.ts"
import { StoreError } from "../../../src/stores/Errors.ts"
import { EventStore, type EventStoreShape } from "../../../src/stores/EventStore.ts"
import { ExecutionHistoryStore, type ExecutionHistoryStoreShape } from "../../../src/stores/ExecutionHistoryStore.ts"
import type { ExecutionRecord } from "../../../src/stores/ExecutionRecord.ts"
import { type LeaseKey, LeaseStore, type LeaseStoreShape, maxGetMany } from "../../../src/stores/LeaseStore.ts"
import { LedgerStore, type LedgerStoreShape } from "../../../src/stores/LedgerStore.ts"
import { PauseStore, type PauseStoreShape, type RootCursor } from "../../../src/stores/PauseStore.ts"
import { RateLimitStore, type RateLimitStoreShape, tenantOfKey } from "../../../src/stores/RateLimitStore.ts"
import { RecordStore, type RecordStoreShape } from "../../../src/stores/RecordStore.ts"
import { RequestStore, type RequestStoreShape } from "../../../src/stores/RequestStore.ts"
import { type ScheduleRow, ScheduleStore, type ScheduleStoreShape } from "../../../src/stores/ScheduleStore.ts"
import { type Timer, TimerStore, type TimerStoreShape } from "../../../src/stores/TimerStore.ts"
import { TreeStore, type TreeStoreShape } from "../../../src/stores/TreeStore.ts"
import type { Router } from "./router.ts"
import { routedSaver } from "./saver.ts"
import type { Shard } from "./shard.ts"

/**
 * The store services every shard's bundle provides.
 */
export type ShardServices = StoreServices

type Ctx = Context.Context<ShardServices>

/** Two texts in code point order: the byte order of their UTF-8 (Postgres keys are COLLATE "C", SQLite's BINARY). */
const compareText = (x: string, y: string): number => {
  const n = Math.min(x.length, y.length)
  for (let i = 0; i < n; i++) {
    const a = x.codePointAt(i)!
    const b = y.codePointAt(i)!
    if (a !== b) return a < b ? -1 : 1
    if (a > 0xffff) i++
  }
  return x.length - y.length
}

/** Keys in the stores' order: texts by their bytes, numbers by value. */
const compare = (a: ReadonlyArray<string | number>, b: ReadonlyArray<string | number>): number => {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    const c = typeof x === "string" && typeof y === "string" ? compareText(x, y) : x < y ? -1 : x > y ? 1 : 0
    if (c !== 0) return c
  }
  return 0
}

/** The first `limit` of every shard's page of a keyset scan, in the stores' order: each shard answered its first `limit` after the same cursor. */
const merged = <A>(pages: ReadonlyArray<ReadonlyArray<A>>, key: (a: A) => ReadonlyArray<string | number>, limit: number): ReadonlyArray<A> =>
  pages.flat().sort((a, b) => compare(key(a), key(b))).slice(0, limit)

/** The earliest of the shards' answers. */
const earliest = (answers: ReadonlyArray<Option.Option<number>>): Option.Option<number> =>
  answers.reduce<Option.Option<number>>((min, o) => (Option.isSome(o) && (Option.isNone(min) || o.value < min.value) ? o : min), Option.none())

const rootKey = (r: RootCursor) => [r.tenantId, r.rootExecutionId]

/**
 * Runs `f` on the shards one after another from `start`, each given what is
 * left of `limit` (`f` answers how much it used), until it is used up: the
 * deletes of retention and the claims of due work, which must not take more
 * than `limit` in all. A shard failing with a `StoreError` is passed over
 * (and logged); any other failure (the caller's input) fails the call; every
 * shard failing fails it with the first failure.
 */
const inTurn = <S, E>(
  router: Router<S>,
  store: string,
  operation: string,
  start: number,
  limit: number,
  f: (stores: Context.Context<S>, left: number) => Effect.Effect<number, E>
): Effect.Effect<number, E | StoreError> =>
  Effect.gen(function*() {
    let used = 0
    let failure: StoreError | undefined
    let answered = 0
    const shards = yield* router.reached
    const n = shards.length
    // The first shard always: it refuses a bad `limit` (InvalidInputError) as every shard would.
    for (let i = 0; i < n && (i === 0 || used < limit); i++) {
      const shard = shards[(start + i) % n]!
      const exit = yield* Effect.exit(router.onShard(store, operation, shard, (stores) => f(stores, limit - used), undefined, "now"))
      if (Exit.isSuccess(exit)) {
        answered++
        used += exit.value
        yield* router.reachedAgain(store, operation, shard)
        continue
      }
      const error = Option.getOrUndefined(Exit.findErrorOption(exit))
      if (error === undefined || !isStoreError(error)) return yield* (exit as Exit.Exit<never, E | StoreError>)
      failure ??= error
      yield* router.warnWithout(store, operation, "goes on", shard, error)
    }
    if (answered === 0 && failure !== undefined) return yield* Effect.fail(failure)
    return used
  })

/** {@link inTurn} collecting what each shard answered. */
const collectInTurn = <S, A, E>(
  router: Router<S>,
  store: string,
  operation: string,
  start: number,
  limit: number,
  f: (stores: Context.Context<S>, left: number) => Effect.Effect<ReadonlyArray<A>, E>
): Effect.Effect<ReadonlyArray<A>, E | StoreError> =>
  Effect.suspend(() => {
    const out: Array<A> = []
    return Effect.as(
      inTurn(router, store, operation, start, limit, (stores, left) =>
        Effect.map(f(stores, left), (got) => {
          out.push(...got)
          return got.length
        })),
      out
    )
  })

/** A shard whose bundle lacks what the others have (a mix of bundle kinds). */
const unlike = (store: string, operation: string, what: string) =>
  new StoreError({ store, operation, kind: "Config", reason: `this shard is not like the others: ${what}; give every shard the same kind of bundle` })

const isStoreError = (e: unknown): e is StoreError => typeof e === "object" && e !== null && (e as { _tag?: unknown })._tag === "StoreError"

/** A counter: where the next claim starts, so that no shard's due work waits behind another's. */
const turns = () => {
  let next = 0
  return () => next++
}

const get = <I, A>(stores: Ctx, tag: Context.Key<I, A>): A => Context.get(stores as Context.Context<I>, tag)

/** The routed services, in a Context. */
export const routedStores = (router: Router<ShardServices>): Context.Context<ShardServices> => {
  const built = router.shards.map((s) => s.built()).filter((c): c is Ctx => c !== undefined)
  const allBuilt = <A>(f: (stores: Ctx) => A) => built.map(f)
  const on = router.onTenant
  const pingAll = (store: string, tag: Context.Key<any, { readonly ping: Effect.Effect<void, StoreError> }>) =>
    Effect.asVoid(router.fanOut(store, "ping", "complete", (stores) => get(stores, tag).ping))

  // LeaseStore ----------------------------------------------------------------
  const L = "LeaseStore"
  const lease = (s: Ctx) => get(s, LeaseStore)
  // Decided on the shards built at start (a shard down then is taken to be of the same kind as the others).
  const takeOverEverywhere = built.length > 0 && allBuilt((s) => lease(s).takeOver !== undefined).every(Boolean)
  const leases: LeaseStoreShape = {
    acquire: (t, root, holder, ttl, now) => on(L, "acquire", t, (s) => lease(s).acquire(t, root, holder, ttl, now)),
    renew: (l, ttl, now) => on(L, "renew", l?.tenantId, (s) => lease(s).renew(l, ttl, now)),
    release: (l) => on(L, "release", l?.tenantId, (s) => lease(s).release(l)),
    get: (t, root) => on(L, "get", t, (s) => lease(s).get(t, root)),
    getMany: (roots) =>
      Effect.gen(function*() {
        // What a store refuses as a whole (not an array, too many roots), the home shard refuses, as one store would.
        if (!Array.isArray(roots) || roots.length > maxGetMany) return yield* router.onShard(L, "getMany", router.home, (s) => lease(s).getMany(roots))
        const groups = new Map<Shard<ShardServices>, Array<LeaseKey>>()
        for (const r of roots) {
          const shard = yield* router.shardOf(L, "getMany", r?.tenantId)
          const group = groups.get(shard) ?? []
          group.push(r)
          groups.set(shard, group)
        }
        if (groups.size === 0) return yield* router.onShard(L, "getMany", router.home, (s) => lease(s).getMany(roots))
        const found = yield* Effect.forEach([...groups], ([shard, group]) => router.onShard(L, "getMany", shard, (s) => lease(s).getMany(group)), {
          concurrency: "unbounded"
        })
        return found.flat()
      }),
    ...(takeOverEverywhere
      ? {
        takeOver: (current, holder, ttl, now) =>
          on(L, "takeOver", current?.tenantId, (s) => {
            const takeOver = lease(s).takeOver
            return takeOver === undefined ? Effect.fail(unlike("LeaseStore", "takeOver", "its LeaseStore cannot take a lease over")) : takeOver(current, holder, ttl, now)
          })
      }
      : {}),
    ping: pingAll(L, LeaseStore)
  }

  // RecordStore ---------------------------------------------------------------
  const R = "RecordStore"
  const rec = (s: Ctx) => get(s, RecordStore)
  const records: RecordStoreShape = {
    createThread: (input) => on(R, "createThread", input?.tenantId, (s) => rec(s).createThread(input)),
    getThread: (t, thread) => on(R, "getThread", t, (s) => rec(s).getThread(t, thread)),
    createRecord: (r) => on(R, "createRecord", r?.tenantId, (s) => rec(s).createRecord(r)),
    startRoot: (r) => on(R, "startRoot", r?.tenantId, (s) => rec(s).startRoot(r)),
    findActiveRoot: (t, thread) => on(R, "findActiveRoot", t, (s) => rec(s).findActiveRoot(t, thread)),
    getRecord: (t, id) => on(R, "getRecord", t, (s) => rec(s).getRecord(t, id)),
    setStatus: (input) => on(R, "setStatus", input?.tenantId, (s) => rec(s).setStatus(input)),
    setStatusFenced: (input) => on(R, "setStatusFenced", input?.tenantId, (s) => rec(s).setStatusFenced(input)),
    list: (query) => on(R, "list", query?.tenantId, (s) => rec(s).list(query)),
    noteRecoveryFailure: (input) => on(R, "noteRecoveryFailure", input?.tenantId, (s) => rec(s).noteRecoveryFailure(input)),
    findByStatus: (status, limit, after) =>
      Effect.map(
        router.fanOut(R, "findByStatus", "partial", (s) => rec(s).findByStatus(status, limit, after)),
        (pages) => merged(pages, (r: ExecutionRecord) => [r.tenantId, r.executionId], limit)
      ),
    listByThread: (t, thread) => on(R, "listByThread", t, (s) => rec(s).listByThread(t, thread)),
    savePauseAnswer: (a) => on(R, "savePauseAnswer", a?.tenantId, (s) => rec(s).savePauseAnswer(a)),
    listPauseAnswers: (t, id) => on(R, "listPauseAnswers", t, (s) => rec(s).listPauseAnswers(t, id)),
    deleteThread: (t, thread) => on(R, "deleteThread", t, (s) => rec(s).deleteThread(t, thread)),
    ping: pingAll(R, RecordStore)
  }

  // PauseStore ----------------------------------------------------------------
  const P = "PauseStore"
  const pause = (s: Ctx) => get(s, PauseStore)
  const pauses: PauseStoreShape = {
    save: (p) => on(P, "save", p?.tenantId, (s) => pause(s).save(p)),
    saveFenced: (p, l, now) => on(P, "saveFenced", p?.tenantId, (s) => pause(s).saveFenced(p, l, now)),
    fenced: built.length > 0 && allBuilt((s) => pause(s).fenced).every(Boolean),
    get: (t, id) => on(P, "get", t, (s) => pause(s).get(t, id)),
    resolve: (input) => on(P, "resolve", input?.tenantId, (s) => pause(s).resolve(input)),
    take: (t, id) => on(P, "take", t, (s) => pause(s).take(t, id)),
    withdraw: (t, id, now) => on(P, "withdraw", t, (s) => pause(s).withdraw(t, id, now)),
    listByRoot: (t, root, statuses) => on(P, "listByRoot", t, (s) => pause(s).listByRoot(t, root, statuses)),
    findResolvedRoots: (limit, after) =>
      Effect.map(router.fanOut(P, "findResolvedRoots", "partial", (s) => pause(s).findResolvedRoots(limit, after)), (pages) => merged(pages, rootKey, limit)),
    deleteSettledBefore: (cutoff) =>
      Effect.map(router.fanOut(P, "deleteSettledBefore", "partial", (s) => pause(s).deleteSettledBefore(cutoff)), (ns) => ns.reduce((a, b) => a + b, 0)),
    deleteThread: (t, thread) => on(P, "deleteThread", t, (s) => pause(s).deleteThread(t, thread)),
    ping: pingAll(P, PauseStore)
  }

  // TreeStore -----------------------------------------------------------------
  const T = "TreeStore"
  const tree = (s: Ctx) => get(s, TreeStore)
  const trees: TreeStoreShape = {
    saveIfAbsent: (t, root, key, value) => on(T, "saveIfAbsent", t, (s) => tree(s).saveIfAbsent(t, root, key, value)),
    saveReservedIfAbsent: (t, root, name, value) => on(T, "saveReservedIfAbsent", t, (s) => tree(s).saveReservedIfAbsent(t, root, name, value)),
    saveReservedFenced: (t, root, name, value, l, now) => on(T, "saveReservedFenced", t, (s) => tree(s).saveReservedFenced(t, root, name, value, l, now)),
    get: (t, root, key) => on(T, "get", t, (s) => tree(s).get(t, root, key)),
    getMany: (t, root, keys) => on(T, "getMany", t, (s) => tree(s).getMany(t, root, keys)),
    list: (t, root, prefix) => on(T, "list", t, (s) => tree(s).list(t, root, prefix)),
    deleteRoot: (t, root) => on(T, "deleteRoot", t, (s) => tree(s).deleteRoot(t, root)),
    findRootsWith: (name, limit, after) =>
      Effect.map(router.fanOut(T, "findRootsWith", "partial", (s) => tree(s).findRootsWith(name, limit, after)), (pages) => merged(pages, rootKey, limit)),
    ping: pingAll(T, TreeStore)
  }

  // CheckpointStore -----------------------------------------------------------
  const C = "CheckpointStore"
  const cp = (s: Ctx) => get(s, CheckpointStore)
  const lifecycles = built.length > 0 && allBuilt((s) => cp(s).lifecycle !== undefined).every(Boolean)
  const withLifecycle = <A, E>(operation: string, s: Ctx, f: (l: CheckpointLifecycle) => Effect.Effect<A, E>) => {
    const lifecycle = cp(s).lifecycle
    return lifecycle === undefined ? Effect.fail(unlike(C, operation, "its CheckpointStore has no lifecycle (a saver of its own)")) : f(lifecycle)
  }
  const checkpoints: CheckpointStoreShape = {
    saver: routedSaver(router, (s) => cp(s).saver),
    fenced: built.length > 0 && allBuilt((s) => cp(s).fenced).every(Boolean),
    deleteThread: (t, thread) => on(C, "deleteThread", t, (s) => cp(s).deleteThread(t, thread)),
    ...(lifecycles
      ? {
        lifecycle: {
          listThreads: (after, limit) =>
            Effect.map(
              router.fanOut(C, "listThreads", "partial", (s) => withLifecycle("listThreads", s, (l) => l.listThreads(after, limit))),
              (pages) => merged(pages, (k) => [k.tenantId, k.threadId], limit)
            ),
          pruneThread: (t, thread, rule, limit) => on(C, "pruneThread", t, (s) => withLifecycle("pruneThread", s, (l) => l.pruneThread(t, thread, rule, limit))),
          listCheckpoints: (t, thread, options) => on(C, "listCheckpoints", t, (s) => withLifecycle("listCheckpoints", s, (l) => l.listCheckpoints(t, thread, options)))
        }
      }
      : {}),
    ping: pingAll(C, CheckpointStore)
  }

  // LedgerStore ---------------------------------------------------------------
  const D = "LedgerStore"
  const ledger = (s: Ctx) => get(s, LedgerStore)
  const ledgers: LedgerStoreShape = {
    add: (key, amount, limit) => on(D, "add", key?.tenantId, (s) => ledger(s).add(key, amount, limit)),
    get: (key) => on(D, "get", key?.tenantId, (s) => ledger(s).get(key)),
    totals: (key, days) => on(D, "totals", key?.tenantId, (s) => ledger(s).totals(key, days)),
    ping: pingAll(D, LedgerStore)
  }

  // RateLimitStore: a key that names its tenant (`tenantOfKey`: a tenant's quota permits, a tree's cap) goes to that
  // tenant's shard; every other key (a provider's: the fleet's) lives on the home shard.
  const K = "RateLimitStore"
  const limitOn = <A, E>(operation: string, key: unknown, f: (s: RateLimitStoreShape) => Effect.Effect<A, E>) => {
    const tenantId = tenantOfKey(key)
    return tenantId === undefined
      ? router.onShard(K, operation, router.home, (s) => f(get(s, RateLimitStore)))
      : on(K, operation, tenantId, (s) => f(get(s, RateLimitStore)))
  }
  const heldSlot = built.length === 0 || allBuilt((s) => get(s, RateLimitStore).heldSlot !== undefined).every(Boolean)
  const rateLimits: RateLimitStoreShape = {
    acquireSlot: (key, max, holder, ttl, now) => limitOn("acquireSlot", key, (s) => s.acquireSlot(key, max, holder, ttl, now)),
    renewSlot: (slot, ttl, now) => limitOn("renewSlot", slot?.key, (s) => s.renewSlot(slot, ttl, now)),
    releaseSlot: (slot) => limitOn("releaseSlot", slot?.key, (s) => s.releaseSlot(slot)),
    ...(heldSlot
      ? { heldSlot: (key, holder, now) => limitOn("heldSlot", key, (s) => s.heldSlot === undefined ? Effect.succeed(Option.none()) : s.heldSlot(key, holder, now)) }
      : {}),
    addToWindow: (key, amount, windowMillis, now, limit) => limitOn("addToWindow", key, (s) => s.addToWindow(key, amount, windowMillis, now, limit)),
    clearWindow: (key) => limitOn("clearWindow", key, (s) => s.clearWindow(key)),
    pauseUntil: (key, until) => limitOn("pauseUntil", key, (s) => s.pauseUntil(key, until)),
    pausedUntil: (key) => limitOn("pausedUntil", key, (s) => s.pausedUntil(key)),
    ping: pingAll(K, RateLimitStore)
  }

  // ChildQueueStore -----------------------------------------------------------
  const Q = "ChildQueueStore"
  const queue = (s: Ctx) => get(s, ChildQueueStore)
  const children: ChildQueueStoreShape = {
    saveIfAbsent: (child) => on(Q, "saveIfAbsent", child?.tenantId, (s) => queue(s).saveIfAbsent(child)),
    claim: (instanceId, ttl, now, workflows) =>
      Effect.gen(function*() {
        // Every shard claims its first row; the first of those in the contract's order (deepest, longest waiting,
        // by id) is answered and the others are handed back to their queues at once.
        const claimed = (yield* router.fanOut(Q, "claim", "partial", (s) => queue(s).claim(instanceId, ttl, now, workflows))).flatMap(Option.toArray)
        const sorted = claimed.sort((a, b) => compare([-a.depth, a.queuedAt, a.executionId, a.tenantId], [-b.depth, b.queuedAt, b.executionId, b.tenantId]))
        yield* Effect.forEach(sorted.slice(1), (c) =>
          on(Q, "releaseClaim", c.tenantId, (s) => queue(s).releaseClaim(c.tenantId, c.executionId, instanceId)).pipe(
            Effect.catch((e) => Effect.logWarning(`ShardedStores: a child claimed beyond the first could not be handed back; it is claimable again when its claim expires: ${e.message}`))
          ), { concurrency: "unbounded", discard: true })
        return Option.fromNullishOr(sorted[0])
      }),
    renewClaim: (t, id, instanceId, ttl, now) => on(Q, "renewClaim", t, (s) => queue(s).renewClaim(t, id, instanceId, ttl, now)),
    complete: (input) => on(Q, "complete", input?.tenantId, (s) => queue(s).complete(input)),
    releaseClaim: (t, id, instanceId) => on(Q, "releaseClaim", t, (s) => queue(s).releaseClaim(t, id, instanceId)),
    get: (t, id) => on(Q, "get", t, (s) => queue(s).get(t, id)),
    listLaunch: (t, launchId) => on(Q, "listLaunch", t, (s) => queue(s).listLaunch(t, launchId)),
    countOpen: (t, launchId) => on(Q, "countOpen", t, (s) => queue(s).countOpen(t, launchId)),
    failQueued: (t, root, result) => on(Q, "failQueued", t, (s) => queue(s).failQueued(t, root, result)),
    deleteRoot: (t, root) => on(Q, "deleteRoot", t, (s) => queue(s).deleteRoot(t, root)),
    requeuePaused: (t, id) => on(Q, "requeuePaused", t, (s) => queue(s).requeuePaused(t, id)),
    ping: pingAll(Q, ChildQueueStore)
  }

  /** A delete of at most `limit` rows over the shards in turn (retention: the caller repeats while a full page comes back). */
  const deleteInTurn = (store: string, operation: string, limit: number, f: (s: Ctx, left: number) => Effect.Effect<number, any>) =>
    inTurn(router, store, operation, 0, limit, f)

  // ExecutionHistoryStore -----------------------------------------------------
  const H = "ExecutionHistoryStore"
  const hist = (s: Ctx) => get(s, ExecutionHistoryStore)
  const history: ExecutionHistoryStoreShape = {
    saveIfAbsent: (snapshot, l, now) => on(H, "saveIfAbsent", snapshot?.tenantId, (s) => hist(s).saveIfAbsent(snapshot, l, now)),
    get: (t, id) => on(H, "get", t, (s) => hist(s).get(t, id)),
    list: (query) => on(H, "list", query?.tenantId, (s) => hist(s).list(query)),
    deleteEndedBefore: (cutoff, limit) => deleteInTurn(H, "deleteEndedBefore", limit, (s, left) => hist(s).deleteEndedBefore(cutoff, left)),
    deleteExecutions: (t, ids) => on(H, "deleteExecutions", t, (s) => hist(s).deleteExecutions(t, ids)),
    ping: pingAll(H, ExecutionHistoryStore)
  }

  // RequestStore --------------------------------------------------------------
  const Rq = "RequestStore"
  const req = (s: Ctx) => get(s, RequestStore)
  const requests: RequestStoreShape = {
    claim: (claim) => on(Rq, "claim", claim?.tenantId, (s) => req(s).claim(claim)),
    recordAnswer: (t, key, handle, answer, now) => on(Rq, "recordAnswer", t, (s) => req(s).recordAnswer(t, key, handle, answer, now)),
    get: (t, key, now) => on(Rq, "get", t, (s) => req(s).get(t, key, now)),
    deleteExpired: (now, limit) => deleteInTurn(Rq, "deleteExpired", limit, (s, left) => req(s).deleteExpired(now, left)),
    deleteThread: (t, thread) => on(Rq, "deleteThread", t, (s) => req(s).deleteThread(t, thread)),
    ping: pingAll(Rq, RequestStore)
  }

  // TimerStore ----------------------------------------------------------------
  const Ti = "TimerStore"
  const timer = (s: Ctx) => get(s, TimerStore)
  const timerTurn = turns()
  const timers: TimerStoreShape = {
    arm: (t) => on(Ti, "arm", t?.tenantId, (s) => timer(s).arm(t)),
    get: (t, id) => on(Ti, "get", t, (s) => timer(s).get(t, id)),
    claimDue: (now, limit, claimant, claimMillis) =>
      Effect.map(
        collectInTurn(router, Ti, "claimDue", timerTurn(), limit, (s, left) => timer(s).claimDue(now, left, claimant, claimMillis)),
        (claimed) => [...claimed].sort((a: Timer, b: Timer) => (a.wakesAt ?? 0) - (b.wakesAt ?? 0))
      ),
    nextWake: Effect.map(router.fanOut(Ti, "nextWake", "partial", (s) => timer(s).nextWake), earliest),
    release: (t, id, claimant, wakesAt) => on(Ti, "release", t, (s) => timer(s).release(t, id, claimant, wakesAt)),
    disarm: (t, id) => on(Ti, "disarm", t, (s) => timer(s).disarm(t, id)),
    listByRoot: (t, root) => on(Ti, "listByRoot", t, (s) => timer(s).listByRoot(t, root)),
    send: (signal) => on(Ti, "send", signal?.tenantId, (s) => timer(s).send(signal)),
    consume: (input) => on(Ti, "consume", input?.tenantId, (s) => timer(s).consume(input)),
    discard: (t, root, seq) => on(Ti, "discard", t, (s) => timer(s).discard(t, root, seq)),
    listSignals: (t, root) => on(Ti, "listSignals", t, (s) => timer(s).listSignals(t, root)),
    deleteRoot: (t, root) => on(Ti, "deleteRoot", t, (s) => timer(s).deleteRoot(t, root)),
    ping: pingAll(Ti, TimerStore)
  }

  // ScheduleStore -------------------------------------------------------------
  const Sc = "ScheduleStore"
  const sched = (s: Ctx) => get(s, ScheduleStore)
  const schedules: ScheduleStoreShape = {
    create: (schedule) => on(Sc, "create", schedule?.tenantId, (s) => sched(s).create(schedule)),
    get: (t, id) => on(Sc, "get", t, (s) => sched(s).get(t, id)),
    list: (t, options) => on(Sc, "list", t, (s) => sched(s).list(t, options)),
    update: (t, id, expected, change, now) => on(Sc, "update", t, (s) => sched(s).update(t, id, expected, change, now)),
    due: (now, limit) =>
      Effect.map(
        router.fanOut(Sc, "due", "partial", (s) => sched(s).due(now, limit)),
        (pages) => merged(pages, (r: ScheduleRow) => [r.nextFireAt, r.tenantId, r.scheduleId], limit)
      ),
    nextDue: Effect.map(router.fanOut(Sc, "nextDue", "partial", (s) => sched(s).nextDue), earliest),
    delete: (t, id) => on(Sc, "delete", t, (s) => sched(s).delete(t, id)),
    ping: pingAll(Sc, ScheduleStore)
  }

  // EventStore ----------------------------------------------------------------
  const E = "EventStore"
  const ev = (s: Ctx) => get(s, EventStore)
  const events: EventStoreShape = {
    append: (l, thread, input, now) => on(E, "append", l?.tenantId, (s) => ev(s).append(l, thread, input, now)),
    read: (t, thread, after, limit) => on(E, "read", t, (s) => ev(s).read(t, thread, after, limit)),
    deleteBefore: (cutoff, limit) => deleteInTurn(E, "deleteBefore", limit, (s, left) => ev(s).deleteBefore(cutoff, left)),
    ping: pingAll(E, EventStore)
  }

  // ConcurrencyKeyStore -------------------------------------------------------
  const Ck = "ConcurrencyKeyStore"
  const keyed = (s: Ctx) => get(s, ConcurrencyKeyStore)
  const concurrencyKeys: ConcurrencyKeyStoreShape = {
    enqueue: (entry) => on(Ck, "enqueue", entry?.tenantId, (s) => keyed(s).enqueue(entry)),
    release: (t, id, now) => on(Ck, "release", t, (s) => keyed(s).release(t, id, now)),
    get: (t, id) => on(Ck, "get", t, (s) => keyed(s).get(t, id)),
    list: (t, key) => on(Ck, "list", t, (s) => keyed(s).list(t, key)),
    listAdmitted: (limit, after) =>
      Effect.map(
        router.fanOut(Ck, "listAdmitted", "partial", (s) => keyed(s).listAdmitted(limit, after)),
        (pages) => merged(pages, (e: KeyEntry) => [e.tenantId, e.executionId], limit)
      ),
    ping: pingAll(Ck, ConcurrencyKeyStore)
  }

  // DebounceStore -------------------------------------------------------------
  const Db = "DebounceStore"
  const debounced = (s: Ctx) => get(s, DebounceStore)
  const debounces: DebounceStoreShape = {
    offer: (offer) => on(Db, "offer", offer?.tenantId, (s) => debounced(s).offer(offer)),
    close: (t, id, expected, now) => on(Db, "close", t, (s) => debounced(s).close(t, id, expected, now)),
    get: (t, id) => on(Db, "get", t, (s) => debounced(s).get(t, id)),
    // The open ones earliest first, then the closed ones, as one store answers them.
    due: (now, limit) =>
      Effect.map(
        router.fanOut(Db, "due", "partial", (s) => debounced(s).due(now, limit)),
        (pages) => merged(pages, (w: DebounceWindow) => [w.open ? 0 : 1, w.open ? w.fireAt : 0, w.tenantId, w.executionId], limit)
      ),
    nextDue: Effect.map(router.fanOut(Db, "nextDue", "partial", (s) => debounced(s).nextDue), earliest),
    delete: (t, id) => on(Db, "delete", t, (s) => debounced(s).delete(t, id)),
    ping: pingAll(Db, DebounceStore)
  }

  return Context.make(LeaseStore, leases).pipe(
    Context.add(RecordStore, records),
    Context.add(PauseStore, pauses),
    Context.add(TreeStore, trees),
    Context.add(CheckpointStore, checkpoints),
    Context.add(LedgerStore, ledgers),
    Context.add(RateLimitStore, rateLimits),
    Context.add(ChildQueueStore, children),
    Context.add(ExecutionHistoryStore, history),
    Context.add(RequestStore, requests),
    Context.add(TimerStore, timers),
    Context.add(ScheduleStore, schedules),
    Context.add(EventStore, events),
    Context.add(ConcurrencyKeyStore, concurrencyKeys),
    Context.add(DebounceStore, debounces)
  )
}
