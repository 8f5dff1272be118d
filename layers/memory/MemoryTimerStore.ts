/**
 * In-memory `TimerStore`. Every operation is one synchronous step, so each is
 * atomic across the instances sharing the `MemoryState`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as TimerStore from "../../src/stores/TimerStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const toSignal = ({ timedOut: _, ...row }: Rows.SignalRow): TimerStore.Signal => ({ ...row, payload: JSON.parse(row.payload) })

/** Claim order: earliest `wakesAt` first, then the key. */
const byWake = (a: TimerStore.Timer, b: TimerStore.Timer) =>
  (a.wakesAt ?? 0) - (b.wakesAt ?? 0) || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.pauseId < b.pauseId ? -1 : a.pauseId > b.pauseId ? 1 : 0)

/**
 * The in-memory `TimerStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) => {
  const signalsOf = (tenantId: string, root: string) => rows.signals.get(Rows.key(tenantId, root)) ?? []
  return TimerStore.make({
    arm: (timer) =>
      Effect.sync(() => {
        const k = Rows.key(timer.tenantId, timer.pauseId)
        if (rows.timers.has(k)) return false
        rows.timers.set(k, { ...timer })
        return true
      }),
    get: (tenantId, pauseId) => Effect.sync(() => Option.fromUndefinedOr(rows.timers.get(Rows.key(tenantId, pauseId)))),
    claimDue: (now, limit, claimant, claimMillis) =>
      Effect.sync(() => {
        const due = [...rows.timers.values()].filter((t) => t.wakesAt !== null && t.wakesAt <= now).sort(byWake).slice(0, limit)
        return due.map((t) => {
          const claimed: TimerStore.Timer = { ...t, wakesAt: now + claimMillis, claimedBy: claimant }
          rows.timers.set(Rows.key(t.tenantId, t.pauseId), claimed)
          return claimed
        })
      }),
    nextWake: Effect.sync(() => {
      let next: number | undefined
      for (const t of rows.timers.values()) if (t.wakesAt !== null && (next === undefined || t.wakesAt < next)) next = t.wakesAt
      return Option.fromUndefinedOr(next)
    }),
    release: (tenantId, pauseId, claimant, wakesAt) =>
      Effect.sync(() => {
        const k = Rows.key(tenantId, pauseId)
        const t = rows.timers.get(k)
        if (t === undefined || t.claimedBy !== claimant) return false
        rows.timers.set(k, { ...t, wakesAt, claimedBy: null })
        return true
      }),
    disarm: (tenantId, pauseId) => Effect.sync(() => rows.timers.delete(Rows.key(tenantId, pauseId))),
    listByRoot: (tenantId, root) =>
      Effect.sync(() =>
        [...rows.timers.values()]
          .filter((t) => t.tenantId === tenantId && t.rootExecutionId === root)
          .sort((a, b) => (a.pauseId < b.pauseId ? -1 : a.pauseId > b.pauseId ? 1 : 0))
      ),
    send: (input) =>
      Effect.sync(() => {
        const row: Rows.SignalRow = { ...input, seq: ++rows.signalSeq.value, payload: JSON.stringify(input.payload ?? null), consumedBy: null }
        const k = Rows.key(input.tenantId, input.rootExecutionId)
        rows.signals.set(k, [...signalsOf(input.tenantId, input.rootExecutionId), row])
        for (const [tk, t] of rows.timers) {
          if (t.tenantId === input.tenantId && t.rootExecutionId === input.rootExecutionId && t.kind === "Signal" && t.name === input.name) {
            rows.timers.set(tk, { ...t, wakesAt: input.sentAt, claimedBy: null })
          }
        }
        return toSignal(row)
      }),
    consume: ({ name, now, pauseId, rootExecutionId, tenantId, threadId, timeUp }) =>
      Effect.sync((): TimerStore.Taken => {
        const list = signalsOf(tenantId, rootExecutionId)
        const taken = list.find((s) => s.consumedBy === pauseId)
        if (taken !== undefined) return taken.timedOut === true ? { _tag: "TimedOut" } : { _tag: "Signal", signal: toSignal(taken) }
        const next = list.find((s) => s.consumedBy === null && s.name === name)
        if (next !== undefined) {
          next.consumedBy = pauseId
          return { _tag: "Signal", signal: toSignal(next) }
        }
        if (!timeUp) return { _tag: "Waiting" }
        const seal: Rows.SignalRow = { tenantId, threadId, rootExecutionId, seq: ++rows.signalSeq.value, name, payload: "null", sentAt: now, consumedBy: pauseId, timedOut: true }
        rows.signals.set(Rows.key(tenantId, rootExecutionId), [...list, seal])
        return { _tag: "TimedOut" }
      }),
    discard: (tenantId, root, seq) =>
      Effect.sync(() => {
        const list = signalsOf(tenantId, root)
        const at = list.findIndex((s) => s.seq === seq)
        if (at < 0) return true
        if (list[at]!.consumedBy !== null) return false
        rows.signals.set(Rows.key(tenantId, root), list.filter((_, i) => i !== at))
        return true
      }),
    listSignals: (tenantId, root) => Effect.sync(() => signalsOf(tenantId, root).filter((s) => s.timedOut !== true).map(toSignal)),
    deleteRoot: (tenantId, root) =>
      Effect.sync(() => {
        const signals = signalsOf(tenantId, root).length
        rows.signals.delete(Rows.key(tenantId, root))
        return signals + Rows.deleteWhere(rows.timers, (t) => t.tenantId === tenantId && t.rootExecutionId === root)
      }),
    ping: Effect.void
  })
})

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(TimerStore.TimerStore, make)
