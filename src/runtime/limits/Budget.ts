/**
 * Spend budgets over `LedgerStore`: token, tool or money spend recorded per
 * execution, tenant and application, and a limit per scope that a guarded
 * call is checked against. Totals are exact across instances: a spend with a
 * limit is one atomic add in the store that never passes the limit, so
 * concurrent spenders on any number of instances stop exactly at it.
 *
 * - `spend(budgets, amount)` reserves `amount` in every budget, failing with
 *   `BudgetExceededError` (naming the scope) when one would pass its limit.
 *   Budgets are charged in the order given and a failure does not take back
 *   the charges before it: list the narrowest scope first.
 * - `record(keys, amount)` adds spend that already happened (no limit: it is
 *   counted even past a budget, so the next check fails).
 * - `check(budgets)` fails with `BudgetExceededError` when a budget is
 *   already used up (total ≥ limit).
 *
 * A budget's window is a UTC day of the Clock (`"day"`) or its whole life
 * (`"lifetime"`, kept under the day `0000-01-01`).
 *
 * @since 0.1.0
 */
import { Clock, Effect, Schema } from "effect"
import { BatonConfigError, type InvalidInputError, type StoreError } from "../../stores/Errors.ts"
import type { ExecutionId, TenantId } from "../../stores/Ids.ts"
import * as LedgerStore from "../../stores/LedgerStore.ts"

/**
 * A spend that would pass a budget, or a check on a budget used up.
 *
 * @category errors
 * @since 0.1.0
 */
export class BudgetExceededError extends Schema.TaggedError<BudgetExceededError>()("BudgetExceededError", {
  tenantId: Schema.String,
  scope: Schema.String,
  scopeId: Schema.String,
  window: Schema.String,
  limit: Schema.Number,
  total: Schema.Number,
  amount: Schema.Number
}) {
  override get message() {
    return `The ${this.scope} budget of ${this.scopeId} (tenant ${this.tenantId}, ${this.window}) is ${this.limit}; ${this.total} is spent, so ${this.amount} more does not fit. Nothing was charged to it; raise the budget or wait for its next window.`
  }
}

/**
 * A limit on the spend of one scope.
 *
 * @category models
 * @since 0.1.0
 */
export interface Budget {
  readonly tenantId: TenantId
  readonly scope: LedgerStore.LedgerScope
  /** The execution id, the tenant id, or the application's name. */
  readonly scopeId: string
  readonly limit: number
  /** `"day"` (the Clock's UTC day, default) or `"lifetime"`. */
  readonly window?: "day" | "lifetime" | undefined
}

/**
 * Where spend is counted, without a limit.
 *
 * @category models
 * @since 0.1.0
 */
export type SpendKey = Omit<Budget, "limit">

/**
 * The errors of the budget operations.
 *
 * @category models
 * @since 0.1.0
 */
export type BudgetError = BudgetExceededError | StoreError | InvalidInputError

const lifetimeDay = "0000-01-01"

const ledgerKey = (key: SpendKey, now: number): LedgerStore.LedgerKey => ({
  tenantId: key.tenantId,
  scope: key.scope,
  scopeId: key.scopeId,
  day: key.window === "lifetime" ? lifetimeDay : LedgerStore.dayOf(now)
})

const exceeded = (b: Budget, total: number, amount: number) =>
  new BudgetExceededError({
    tenantId: b.tenantId,
    scope: b.scope,
    scopeId: b.scopeId,
    window: b.window ?? "day",
    limit: b.limit,
    total,
    amount
  })

/**
 * Charges `amount` to every budget, atomically per budget; fails with
 * `BudgetExceededError` at the first that would pass its limit.
 *
 * @category operations
 * @since 0.1.0
 */
export const spend = (budgets: ReadonlyArray<Budget>, amount: number): Effect.Effect<void, BudgetError, LedgerStore.LedgerStore> =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore.LedgerStore
    const now = yield* Clock.currentTimeMillis
    for (const b of budgets) {
      const r = yield* ledger.add(ledgerKey(b, now), amount, b.limit)
      if (r._tag === "WouldExceed") return yield* exceeded(b, r.total, amount)
    }
  })

/**
 * Counts `amount` of spend that already happened under every key (no limit).
 *
 * @category operations
 * @since 0.1.0
 */
export const record = (keys: ReadonlyArray<SpendKey>, amount: number): Effect.Effect<void, StoreError | InvalidInputError, LedgerStore.LedgerStore> =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore.LedgerStore
    const now = yield* Clock.currentTimeMillis
    for (const k of keys) yield* ledger.add(ledgerKey(k, now), amount)
  })

/**
 * Fails with `BudgetExceededError` when a budget is used up (total ≥ limit).
 *
 * @category operations
 * @since 0.1.0
 */
export const check = (budgets: ReadonlyArray<Budget>): Effect.Effect<void, BudgetError, LedgerStore.LedgerStore> =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore.LedgerStore
    const now = yield* Clock.currentTimeMillis
    for (const b of budgets) {
      const total = yield* ledger.get(ledgerKey(b, now))
      if (total >= b.limit) return yield* exceeded(b, total, 0)
    }
  })

/**
 * The total spent under a key in its current window.
 *
 * @category operations
 * @since 0.1.0
 */
export const spent = (key: SpendKey): Effect.Effect<number, StoreError | InvalidInputError, LedgerStore.LedgerStore> =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore.LedgerStore
    return yield* ledger.get(ledgerKey(key, yield* Clock.currentTimeMillis))
  })

/**
 * A budget a workflow (`Workflow.make({ budgets })`) or the application
 * (`Baton.layer({ budgets })`) declares, made concrete for each step as
 * `ctx.budgets`:
 * - `"tree"`: the spend of one execution tree — its root and every child,
 *   nested ones too, on whichever instance each runs — counted under the
 *   root's execution id (scope `"execution"`). Default window `"lifetime"`.
 * - `"tenant"`: the spend of the tenant the execution runs for. Default
 *   window `"day"`.
 *
 * @category models
 * @since 0.1.0
 */
export interface DeclaredBudget {
  readonly scope: "tree" | "tenant"
  /** The most that may be spent in the window: a number > 0. */
  readonly limit: number
  readonly window?: "day" | "lifetime" | undefined
}

/**
 * The budgets `declared` give an execution of the tree rooted at
 * `rootExecutionId`: a tree budget counts under the root's id, so a child's
 * spend reaches its root's counter.
 *
 * @category constructors
 * @since 0.1.0
 */
export const declaredFor = (
  declared: ReadonlyArray<DeclaredBudget>,
  at: { readonly tenantId: TenantId; readonly rootExecutionId: ExecutionId }
): ReadonlyArray<Budget> =>
  declared.map((d): Budget =>
    d.scope === "tree"
      ? { tenantId: at.tenantId, scope: "execution", scopeId: at.rootExecutionId, limit: d.limit, window: d.window ?? "lifetime" }
      : { tenantId: at.tenantId, scope: "tenant", scopeId: at.tenantId, limit: d.limit, window: d.window ?? "day" }
  )

/**
 * Checks declared budgets; a bad one fails with `BatonConfigError` naming
 * `field` and its index.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validateDeclared = (field: string, declared: unknown): Effect.Effect<void, BatonConfigError> =>
  Effect.suspend(() => {
    const fail = (at: string, reason: string) => Effect.fail(new BatonConfigError({ field: at, reason }))
    if (declared === undefined) return Effect.void
    if (!Array.isArray(declared)) return fail(field, "must be a list of budgets ({ scope, limit, window? })")
    for (const [i, d] of declared.entries()) {
      const at = `${field}[${i}]`
      if (d === null || typeof d !== "object") return fail(at, "must be a budget ({ scope, limit, window? })")
      if (d.scope !== "tree" && d.scope !== "tenant") return fail(`${at}.scope`, `is ${JSON.stringify(d.scope)}: it must be "tree" or "tenant"`)
      if (typeof d.limit !== "number" || !Number.isFinite(d.limit) || d.limit <= 0) return fail(`${at}.limit`, `is ${String(d.limit)}: it must be a number > 0`)
      if (d.window !== undefined && d.window !== "day" && d.window !== "lifetime") {
        return fail(`${at}.window`, `is ${JSON.stringify(d.window)}: it must be "day" or "lifetime"`)
      }
    }
    return Effect.void
  })
