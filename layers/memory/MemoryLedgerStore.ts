/**
 * In-memory `LedgerStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as LedgerStore from "../../src/stores/LedgerStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const ledgerKey = (k: LedgerStore.LedgerKey) => Rows.key(k.tenantId, k.scope, k.scopeId, k.day)

/**
 * The in-memory `LedgerStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  LedgerStore.make({
    add: (k, amount, limit) =>
      Effect.sync(() => {
        const total = rows.ledger.get(ledgerKey(k)) ?? 0
        if (limit !== undefined && total + amount > limit) return { _tag: "WouldExceed", total, limit } as const
        rows.ledger.set(ledgerKey(k), total + amount)
        return { _tag: "Added", total: total + amount } as const
      }),
    get: (k) => Effect.sync(() => rows.ledger.get(ledgerKey(k)) ?? 0),
    totals: (k, days) => Effect.sync(() => days.map((day) => rows.ledger.get(ledgerKey({ ...k, day })) ?? 0)),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(LedgerStore.LedgerStore, make)
