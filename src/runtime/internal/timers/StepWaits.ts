/**
 * The step side of sleeps and signal waits: `ctx.sleep`, `ctx.sleepUntil`
 * and `ctx.waitFor`. Each calls LangGraph's `interrupt` with a wait marker
 * (see `Waits`): the first time, the step stops there, LangGraph checkpoints
 * and the tree rests paused with no lease; when the runtime answers the pause
 * (the sleep is over, the signal came, the wait timed out) the step runs
 * again from its start and the same call answers at once. Code before the
 * call runs again then: keep side effects after it, or key them.
 *
 * @since 0.1.0
 */
import { interrupt } from "@langchain/langgraph"
import type { Duration } from "effect"
import { InvalidInputError } from "../../../stores/Errors.ts"
import { millisOf } from "../../../stores/internal/options.ts"
import type { PassHandle } from "../pass/pass.ts"
import { signalMarker, sleepMarker, type WaitAnswer } from "./Waits.ts"

/**
 * What `ctx.waitFor` answers: the signal's payload (as sent, JSON) and its
 * place in the tree's send order, or the timeout.
 *
 * @category models
 * @since 0.1.0
 */
export type SignalResult<A = unknown> =
  | { readonly _tag: "Received"; readonly payload: A; readonly seq: number }
  | { readonly _tag: "TimedOut"; readonly at: number }

/**
 * What `ctx.waitFor` takes: `timeout`, a duration (unset: wait as long as it takes).
 *
 * @category models
 * @since 0.1.0
 */
export interface WaitForOptions {
  readonly timeout?: Duration.Input | undefined
}

/** The most a sleep or timeout may be: what a store's time column and the Clock hold (about 285 000 years). */
const maxMillis = 2 ** 53 / 1000

const needsStore = (what: string) => {
  throw new InvalidInputError({
    operation: what,
    field: "stores",
    reason: "needs a TimerStore shared by the instances: provide one (MemoryStores, SqliteStores and PgStores bundle it)"
  })
}

const durationOf = (operation: string, field: string, value: unknown): number => {
  const millis = millisOf(value)
  if (millis === undefined || !(millis >= 0) || millis > maxMillis) {
    throw new InvalidInputError({ operation, field, reason: `must be a duration ≥ 0, e.g. "30 days" or 2000 (got ${String(value)})` })
  }
  return millis
}

const instantOf = (value: unknown): number => {
  const at = value instanceof Date ? value.getTime() : value
  if (typeof at !== "number" || !Number.isFinite(at) || at < 0) {
    throw new InvalidInputError({ operation: "sleepUntil", field: "instant", reason: `must be a Date or epoch milliseconds ≥ 0 (got ${String(value)})` })
  }
  return at
}

const rest = (payload: Record<string, unknown>): WaitAnswer => interrupt(payload) as WaitAnswer

/**
 * Sleeps until `at` (epoch milliseconds on the Clock): rests the tree.
 *
 * @category internal
 * @since 0.1.0
 */
export const sleepUntil = async (pass: PassHandle, instant: Date | number): Promise<void> => {
  const wakesAt = instantOf(instant)
  if (!pass.timers) needsStore("sleepUntil")
  rest({ [sleepMarker]: { wakesAt } })
}

/**
 * Sleeps for `duration` from now (the Clock's now when the step first got here).
 *
 * @category internal
 * @since 0.1.0
 */
export const sleep = async (pass: PassHandle, duration: Duration.Input): Promise<void> => {
  const millis = durationOf("sleep", "duration", duration)
  if (!pass.timers) needsStore("sleep")
  rest({ [sleepMarker]: { wakesAt: pass.now() + millis } })
}

/**
 * Waits for the next signal `name` sent to the tree (one sent before the
 * wait started included), or until `timeout`.
 *
 * @category internal
 * @since 0.1.0
 */
export const waitFor = async <A>(pass: PassHandle, name: string, options?: WaitForOptions): Promise<SignalResult<A>> => {
  if (typeof name !== "string" || name.length === 0) {
    throw new InvalidInputError({ operation: "waitFor", field: "name", reason: "must be the non-empty name of a signal the workflow declares" })
  }
  const timeout = options?.timeout === undefined ? undefined : durationOf("waitFor", "timeout", options.timeout)
  if (!pass.timers) needsStore("waitFor")
  const answer = rest({ [signalMarker]: { name, timeoutAt: timeout === undefined ? null : pass.now() + timeout } })
  if ("signal" in answer) return { _tag: "Received", payload: answer.signal.payload as A, seq: answer.signal.seq }
  return { _tag: "TimedOut", at: "timedOut" in answer ? answer.timedOut : pass.now() }
}
