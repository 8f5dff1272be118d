/**
 * Spend counters per scope and UTC day.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * What a `LedgerStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * How far an idempotency key reaches: one execution, one tenant, or the whole application.
 *
 * @category models
 * @since 0.1.0
 */
export type LedgerScope = "execution" | "tenant" | "application"
const scopes: ReadonlyArray<LedgerScope> = ["execution", "tenant", "application"]

/**
 * One counter: (tenantId, scope, scopeId, day). `day` is a UTC date, `YYYY-MM-DD`.
 *
 * @category models
 * @since 0.1.0
 */
export interface LedgerKey {
  readonly tenantId: TenantId
  readonly scope: LedgerScope
  readonly scopeId: string
  readonly day: string
}

/**
 * What a ledger lookup or record answers.
 *
 * @category models
 * @since 0.1.0
 */
export type LedgerResult =
  | { readonly _tag: "Added"; readonly total: number }
  | { readonly _tag: "WouldExceed"; readonly total: number; readonly limit: number }

/**
 * Semantics: `add` is atomic across instances: it adds `amount` only if the
 * new total stays ≤ `limit` (when given), and answers the new total, or
 * `WouldExceed` with the unchanged total. Concurrent adds never pass the limit.
 *
 * @category models
 * @since 0.1.0
 */
export interface LedgerStoreShape {
  readonly add: (key: LedgerKey, amount: number, limit?: number | undefined) => Effect.Effect<LedgerResult, Failure>
  readonly get: (key: LedgerKey) => Effect.Effect<number, Failure>
  /** The totals of one counter on each of `days`, in their order (0 for a day never added to): one store call. */
  readonly totals: (key: Omit<LedgerKey, "day">, days: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<number>, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * What a backend implements: the shape, `totals` optional (without it, `make` reads the days one `get` each).
 *
 * @category models
 * @since 0.1.0
 */
export interface LedgerStoreBackend extends Omit<LedgerStoreShape, "totals"> {
  readonly totals?: LedgerStoreShape["totals"] | undefined
}

const checkCounter = (op: string, key: Omit<LedgerKey, "day">) => [
  V.nonEmpty(op, "tenantId", key.tenantId),
  V.oneOf(op, "scope", key.scope, scopes),
  V.nonEmpty(op, "scopeId", key.scopeId)
]

const checkKey = (op: string, key: LedgerKey) => [...checkCounter(op, key), V.day(op, "day", key.day)]

/**
 * The service of the idempotency ledger; see `LedgerStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class LedgerStore extends Context.Service<LedgerStore, LedgerStoreShape>()("baton/LedgerStore") {}

/**
 * Wraps a backend with the contract's argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: LedgerStoreBackend): LedgerStoreShape => {
  const totals = impl.totals ?? ((key: Omit<LedgerKey, "day">, days: ReadonlyArray<string>) =>
    Effect.forEach(days, (day) => impl.get({ ...key, day })))
  return {
    add: (key, amount, limit) =>
      V.checked([
        ...checkKey("LedgerStore.add", key),
        V.nonNegative("LedgerStore.add", "amount", amount),
        limit === undefined ? Effect.void : V.atLeast("LedgerStore.add", "limit", limit, 1)
      ], () => impl.add(key, amount, limit)),
    get: (key) => V.checked(checkKey("LedgerStore.get", key), () => impl.get(key)),
    totals: (key, days) =>
      V.checked([
        ...checkCounter("LedgerStore.totals", key),
        V.days("LedgerStore.totals", "days", days)
      ], () => days.length === 0 ? Effect.succeed([]) : totals(key, days)),
    ping: impl.ping
  }
}

/**
 * The UTC day of an epoch-milliseconds time, as ledger keys use it.
 *
 * @category utils
 * @since 0.1.0
 */
export const dayOf = (millis: number): string => new Date(millis).toISOString().slice(0, 10)
