/**
 * In-memory `RequestStore`: request keys in the shared `MemoryState`,
 * handles and answers as JSON text.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { RequestConflictError } from "../../src/stores/Errors.ts"
import * as RequestStore from "../../src/stores/RequestStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const entryOf = (row: Rows.RequestRow): RequestStore.RequestEntry => ({
  tenantId: row.tenantId,
  requestKey: row.requestKey,
  fingerprint: row.fingerprint,
  handle: JSON.parse(row.handle) as unknown,
  answer: row.answer === null ? null : JSON.parse(row.answer) as unknown,
  answered: row.answer !== null,
  createdAt: row.createdAt,
  expiresAt: row.expiresAt
})

/**
 * The in-memory `RequestStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  RequestStore.make({
    claim: (c) =>
      Effect.suspend((): Effect.Effect<RequestStore.ClaimResult, RequestConflictError> => {
        const k = Rows.key(c.tenantId, c.requestKey)
        const kept = rows.requests.get(k)
        if (kept !== undefined && kept.expiresAt > c.now) {
          return kept.fingerprint === c.fingerprint
            ? Effect.succeed({ _tag: "Existing", entry: entryOf(kept) } as const)
            : Effect.fail(new RequestConflictError({ tenantId: c.tenantId, requestKey: c.requestKey }))
        }
        rows.requests.set(k, {
          tenantId: c.tenantId,
          requestKey: c.requestKey,
          fingerprint: c.fingerprint,
          handle: JSON.stringify(c.handle),
          answer: null,
          createdAt: c.now,
          expiresAt: c.now + c.ttlMillis
        })
        return Effect.succeed({ _tag: "Claimed" } as const)
      }),
    recordAnswer: (tenantId, requestKey, handle, answer, now) =>
      Effect.sync(() => {
        const kept = rows.requests.get(Rows.key(tenantId, requestKey))
        if (kept === undefined || kept.expiresAt <= now || kept.handle !== JSON.stringify(handle)) return false
        kept.answer = JSON.stringify(answer ?? null)
        return true
      }),
    get: (tenantId, requestKey, now) =>
      Effect.sync(() => {
        const kept = rows.requests.get(Rows.key(tenantId, requestKey))
        return kept === undefined || kept.expiresAt <= now ? Option.none() : Option.some(entryOf(kept))
      }),
    deleteThread: (tenantId, threadId) =>
      Effect.sync(() =>
        Rows.deleteWhere(
          rows.requests,
          (row) => row.tenantId === tenantId && (JSON.parse(row.handle) as { threadId?: unknown } | null)?.threadId === threadId
        )
      ),
    deleteExpired: (now, limit) => Effect.sync(() => Rows.deleteWhere(rows.requests, (row) => row.expiresAt <= now, limit)),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(RequestStore.RequestStore, make)
