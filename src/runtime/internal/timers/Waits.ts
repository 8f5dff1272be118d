/**
 * The waits the runtime answers on time: a sleep (`ctx.sleep`) and a wait
 * for a signal (`ctx.waitFor`). Each is a LangGraph interrupt whose payload
 * holds a marker; the tree rests paused on it, with no lease, and the pause
 * is answered by whichever instance wakes its timer — never by `resume`.
 *
 * @since 0.1.0
 */

import type { ChildPauseOrigin } from "../../Children.ts"
/**
 * The key in a sleep's interrupt payload.
 *
 * @category internal
 * @since 0.1.0
 */
export const sleepMarker = "@baton/sleep"

/**
 * The key in a signal wait's interrupt payload.
 *
 * @category internal
 * @since 0.1.0
 */
export const signalMarker = "@baton/signal"

/**
 * A resting wait as `status` shows it: a sleep and when it wakes, or a
 * signal wait, its signal's name and when it times out (null: never). A
 * wait of a resting child (at any depth) carries `child`: the child's ids
 * (send its signals to `child.threadId`).
 *
 * @category models
 * @since 0.1.0
 */
export type RestingWait =
  | { readonly _tag: "Sleep"; readonly pauseId: string; readonly wakesAt: number; readonly child?: ChildPauseOrigin }
  | { readonly _tag: "Signal"; readonly pauseId: string; readonly name: string; readonly timeoutAt: number | null; readonly child?: ChildPauseOrigin }

/**
 * What a wait's pause is answered with: the sleep is over, the signal (its
 * place in send order and its payload), or the timeout.
 *
 * @category models
 * @since 0.1.0
 */
export type WaitAnswer =
  | { readonly woke: number }
  | { readonly signal: { readonly seq: number; readonly payload: unknown } }
  | { readonly timedOut: number }

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const finiteOrNull = (u: unknown): u is number | null => u === null || (typeof u === "number" && Number.isFinite(u))

/**
 * The wait a pause's payload stands for, if it is one (without its pause id).
 *
 * @category internal
 * @since 0.1.0
 */
export const waitOf = (payload: unknown): Wait | undefined => {
  if (!isObject(payload)) return undefined
  const sleep = payload[sleepMarker]
  if (isObject(sleep) && typeof sleep.wakesAt === "number" && Number.isFinite(sleep.wakesAt)) return { _tag: "Sleep", wakesAt: sleep.wakesAt }
  const wait = payload[signalMarker]
  if (isObject(wait) && typeof wait.name === "string" && finiteOrNull(wait.timeoutAt)) {
    return { _tag: "Signal", name: wait.name, timeoutAt: wait.timeoutAt }
  }
  return undefined
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/**
 * A wait as its interrupt payload holds it (a `RestingWait` without its pause id).
 *
 * @category models
 * @since 0.1.0
 */
export type Wait = DistributiveOmit<RestingWait, "pauseId">

/**
 * True for a pause the runtime answers on time (a sleep or a signal wait).
 *
 * @category internal
 * @since 0.1.0
 */
export const isTimerWait = (pause: { readonly payload: unknown }): boolean => waitOf(pause.payload) !== undefined

/**
 * The resting waits among a tree's pending pauses, for `status`.
 *
 * @category internal
 * @since 0.1.0
 */
export const restingWaits = (pending: ReadonlyArray<{ readonly pauseId: string; readonly payload: unknown }>): ReadonlyArray<RestingWait> =>
  pending.flatMap((p) => {
    const wait = waitOf(p.payload)
    return wait === undefined ? [] : [{ ...wait, pauseId: p.pauseId } as RestingWait]
  })

/**
 * The earliest time any of `waits` wakes on its own (a sleep's end, a wait's timeout); null when none will.
 *
 * @category internal
 * @since 0.1.0
 */
export const earliestWake = (waits: ReadonlyArray<RestingWait>): number | null =>
  waits.reduce<number | null>((min, w) => {
    const at = w._tag === "Sleep" ? w.wakesAt : w.timeoutAt
    return at === null ? min : min === null || at < min ? at : min
  }, null)
