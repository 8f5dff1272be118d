/**
 * Inbound request de-duplication in the runtime: `start`, `execute` and
 * `resume` with a `requestKey` claim it in the `RequestStore` (per tenant)
 * before anything else is written, with a fingerprint of the request:
 *
 * - `start` / `execute`: workflow name, config hash, the input (decoded, as
 *   canonical JSON, hashed) and the thread asked for. The claim keeps the
 *   handle of the execution the call is about to start — its ids are made
 *   before the claim — so every call of the key, on any instance, starts or
 *   follows that one execution: exactly one records it (its lease and
 *   `RecordStore.startRoot` decide), the others get its handle. A first
 *   caller that died (or failed) before recording it leaves the key pointing
 *   at an id nobody recorded: the next call of the key starts it.
 * - `resume`: the pause id and the decision (canonical JSON, hashed). A
 *   repeated call finds the decision written (or writes it, when the first
 *   caller died before) and continues or awaits the same tree. One that
 *   finds no pause (pause retention deleted it) reads the kept key instead
 *   (`keptResume`): the same pause and decision answer the kept output, else
 *   `NotPausedError` (whether its decision is the one taken cannot be told).
 *
 * The same key with another fingerprint is `RequestConflictError`, nothing
 * written. The output a call answered is kept with the key
 * (`recordAnswer`), and a later call of the key answers it. Keys expire
 * after `requestRetention`.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { InvalidInputError, RequestConflictError, StoreError } from "../../../stores/Errors.ts"
import { IdGenerator, type TenantId } from "../../../stores/Ids.ts"
import * as V from "../../../stores/internal/validate.ts"
import { type RequestEntry, RequestStore, type RequestStoreShape } from "../../../stores/RequestStore.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import type { ExecutionHandle } from "./Await.ts"
import type { ExecutionOutput } from "../pass/Executor.ts"
import { Instance } from "../Instance.ts"

/**
 * JSON with object keys sorted at every depth: one text per value, whatever
 * the order its keys were written in (Postgres `jsonb` reorders them).
 *
 * @category internal
 * @since 0.1.0
 */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value ?? null, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

/** sha-256 (hex) of a value's canonical JSON. */
const hashOf = (value: unknown) => createHash("sha256").update(canonicalJson(value)).digest("hex")

/**
 * A request key as a call gives it, with the store that keeps it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Keyed {
  readonly store: RequestStoreShape
  readonly tenantId: TenantId
  readonly requestKey: string
}

/**
 * The request store for a call with `requestKey`, once the key is checked
 * (an id: 1–200 characters, no NUL). Without a `RequestStore` given to the
 * Baton Layer the call is refused before anything is written.
 *
 * @category internal
 * @since 0.1.0
 */
export const keyed = (operation: string, tenantId: TenantId, requestKey: string) =>
  Effect.gen(function*() {
    yield* V.nonEmpty(operation, "requestKey", requestKey)
    const store = yield* Effect.serviceOption(RequestStore)
    if (Option.isNone(store)) {
      return yield* new InvalidInputError({
        operation,
        field: "requestKey",
        reason: "needs a RequestStore given to the Baton Layer (the MemoryStores, SqliteStores and PgStores bundles provide one)"
      })
    }
    return { store: store.value, tenantId, requestKey } satisfies Keyed as Keyed
  })

/**
 * What a claim of a key answers a call: the handle its calls share, whether
 * this call claimed it first, and the answer a call of the key recorded.
 *
 * @category models
 * @since 0.1.0
 */
export interface Claimed<H> {
  readonly handle: H
  readonly first: boolean
  readonly answer: Option.Option<unknown>
}

const claim = <H>(key: Keyed, fingerprint: string, handle: H, isHandle: (u: unknown) => u is H) =>
  Effect.gen(function*() {
    const { config } = yield* Instance
    const now = yield* Clock.currentTimeMillis
    const { requestKey, store, tenantId } = key
    const result = yield* store.claim({ tenantId, requestKey, fingerprint, handle, now, ttlMillis: config.requestRetentionMillis })
    if (result._tag === "Claimed") return { handle, first: true, answer: Option.none() } satisfies Claimed<H> as Claimed<H>
    const kept = yield* keptHandle(key, "claim", result.entry, isHandle)
    return { handle: kept, first: false, answer: answerOf(result.entry) } satisfies Claimed<H> as Claimed<H>
  })

/** The handle a kept key holds, when this runtime wrote it (else the store's data is not ours: `StoreError`). */
const keptHandle = <H>(key: Keyed, operation: string, entry: RequestEntry, isHandle: (u: unknown) => u is H) =>
  isHandle(entry.handle)
    ? Effect.succeed(entry.handle)
    : Effect.fail(
      new StoreError({
        store: "RequestStore",
        operation,
        kind: "Data",
        reason: `request key "${key.requestKey}" (tenant ${key.tenantId}) keeps a handle this runtime did not write: ${JSON.stringify(entry.handle)}`
      })
    )

/** The answer a call of the key kept, if any. */
const answerOf = (entry: RequestEntry): Option.Option<unknown> => entry.answered ? Option.some(entry.answer) : Option.none()

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** A kept start handle: the ids of the execution every call of the key starts or follows. */
const isStartHandle = (u: unknown): u is ExecutionHandle =>
  isRecord(u) && typeof u.executionId === "string" && typeof u.threadId === "string" && typeof u.tenantId === "string" &&
  u.rootExecutionId === u.executionId

/**
 * Claims a start's key: the ids of the execution it starts are made here
 * (the thread's too when none is asked for), kept with the claim, and
 * answered to every call of the key — the first and the repeated ones.
 *
 * @category internal
 * @since 0.1.0
 */
export const claimStart = Effect.fnUntraced(function*(
  key: Keyed,
  workflow: AnyWorkflow,
  input: unknown,
  threadId: string | undefined
) {
  const ids = yield* IdGenerator
  const fingerprint = hashOf(["start", workflow.name, workflow.configHash, hashOf(input), threadId ?? null])
  const executionId = yield* ids.make("exec")
  const handle: ExecutionHandle = {
    executionId,
    rootExecutionId: executionId,
    threadId: threadId ?? (yield* ids.make("thread")),
    tenantId: key.tenantId
  }
  return yield* claim(key, fingerprint, handle, isStartHandle)
})

/**
 * The handle a resume's key keeps: the pause answered and the tree it continues.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResumeHandle {
  readonly pauseId: string
  readonly executionId: string
  readonly threadId: string
  readonly tenantId: string
}

const isResumeHandle = (u: unknown): u is ResumeHandle =>
  isRecord(u) && typeof u.pauseId === "string" && typeof u.executionId === "string" && typeof u.threadId === "string" &&
  typeof u.tenantId === "string"

/**
 * Claims a resume's key for (pause, decision).
 *
 * @category internal
 * @since 0.1.0
 */
export const claimResume = (key: Keyed, handle: ResumeHandle, decision: unknown) =>
  claim(key, resumeFingerprint(handle.pauseId, decision), handle, isResumeHandle)

/** What a resume's key is claimed for: the pause and the decision (decoded, canonical JSON, hashed). */
const resumeFingerprint = (pauseId: string, decision: unknown) => hashOf(["resume", pauseId, hashOf(decision)])

/**
 * A resume's key as kept (live) in the store: the handle of the first call
 * — the pause it answered and that pause's tree — and the answer a call of
 * the key kept. Read by a repeated call that no longer finds its pause
 * (pause retention deleted it while the key is kept).
 *
 * @category models
 * @since 0.1.0
 */
export interface KeptResume {
  readonly handle: ResumeHandle
  readonly fingerprint: string
  readonly answer: Option.Option<unknown>
}

/**
 * The live resume key, if the store keeps one (`None` once it expired or was
 * never claimed). A key kept for another kind of request (a `start`'s) is a
 * resume with another fingerprint: `RequestConflictError`.
 *
 * @category internal
 * @since 0.1.0
 */
export const keptResume = (key: Keyed) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const entry = yield* key.store.get(key.tenantId, key.requestKey, now)
    if (Option.isNone(entry)) return Option.none<KeptResume>()
    if (isStartHandle(entry.value.handle)) return yield* conflict(key)
    const handle = yield* keptHandle(key, "get", entry.value, isResumeHandle)
    return Option.some<KeptResume>({ handle, fingerprint: entry.value.fingerprint, answer: answerOf(entry.value) })
  })

/**
 * Fails with `RequestConflictError` unless the kept key was claimed for
 * this pause — checked before the decision is decoded by the schema of the
 * kept pause's workflow.
 *
 * @category internal
 * @since 0.1.0
 */
export const samePause = (key: Keyed, kept: KeptResume, pauseId: string) =>
  kept.handle.pauseId === pauseId ? Effect.void : conflict(key)

/**
 * Fails with `RequestConflictError` unless the kept key was claimed for
 * this pause and decision (decoded by the workflow's decision schema).
 *
 * @category internal
 * @since 0.1.0
 */
export const sameResume = (key: Keyed, kept: KeptResume, pauseId: string, decision: unknown) =>
  kept.handle.pauseId === pauseId && kept.fingerprint === resumeFingerprint(pauseId, decision) ? Effect.void : conflict(key)

const conflict = (key: Keyed) => Effect.fail(new RequestConflictError({ tenantId: key.tenantId, requestKey: key.requestKey }))

/**
 * True when a stored decision is `decision` (as canonical JSON): a repeated
 * call of a resume's key finds its own decision written.
 *
 * @category internal
 * @since 0.1.0
 */
export const sameDecision = (stored: unknown, decision: unknown) => canonicalJson(stored) === canonicalJson(decision)

/**
 * Keeps the output a call of the key answered, for later calls of the key.
 * Never fails the call: a store that refuses it is logged, and later calls
 * await the execution instead.
 *
 * @category internal
 * @since 0.1.0
 */
export const recordAnswer = (key: Keyed, handle: unknown, out: ExecutionOutput) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const kept = yield* key.store.recordAnswer(key.tenantId, key.requestKey, handle, out, now)
    if (!kept) yield* Effect.logDebug(`request key "${key.requestKey}" expired before its answer was kept`)
  }).pipe(
    Effect.catch((e) => Effect.logWarning(`the answer of request key "${key.requestKey}" was not kept (later calls await the execution): ${e.message}`))
  )
