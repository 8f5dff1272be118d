/**
 * When a schedule ticks: a cron expression in an IANA time zone (effect's
 * `Cron`, with its rule for repeated local times), or a fixed interval from
 * an anchor instant. Pure functions of epoch milliseconds, so the firing
 * leader and the API compute the same ticks.
 *
 * Daylight-saving changes (effect's `Cron` semantics, kept as they are):
 * - a local time the change skips (clocks forward: 02:30 on the spring day
 *   in Europe/Berlin) resolves to the instant one gap later (03:30 local):
 *   the tick still fires once that day;
 * - a local time the change repeats (clocks back: 02:30 on the autumn day)
 *   fires once, at its first occurrence, unless the schedule says
 *   `dstOverlap: "later"` (the second) or `"both"` (twice).
 * An interval schedule counts elapsed time and ignores local time.
 *
 * @since 0.1.0
 */
import { Cron, Result } from "effect"

/**
 * A schedule's timing, as kept in its definition (JSON).
 *
 * @category models
 * @since 0.1.0
 */
export type Timing =
  | { readonly _tag: "Cron"; readonly expression: string; readonly timeZone: string; readonly dstOverlap: Cron.DstOverlapPolicy }
  | { readonly _tag: "Every"; readonly everyMillis: number; readonly anchor: number }

const compiled = new Map<string, Cron.Cron>()

/**
 * The parsed cron of a timing, or why it does not parse.
 *
 * @category internal
 * @since 0.1.0
 */
export const parseCron = (expression: string, timeZone: string, dstOverlap: Cron.DstOverlapPolicy): Result.Result<Cron.Cron, string> => {
  const key = JSON.stringify([expression, timeZone, dstOverlap])
  const kept = compiled.get(key)
  if (kept !== undefined) return Result.succeed(kept)
  const parsed = Cron.parse(expression, timeZone, { onDstOverlap: dstOverlap })
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure.message)
  if (compiled.size > 1_000) compiled.clear()
  compiled.set(key, parsed.success)
  return Result.succeed(parsed.success)
}

const cronOf = (t: Extract<Timing, { _tag: "Cron" }>): Cron.Cron => Result.getOrThrow(parseCron(t.expression, t.timeZone, t.dstOverlap))

/**
 * The first tick strictly after `at`.
 *
 * @category internal
 * @since 0.1.0
 */
export const nextAfter = (timing: Timing, at: number): number => {
  if (timing._tag === "Cron") return Cron.next(cronOf(timing), at).getTime()
  if (at < timing.anchor) return timing.anchor
  return timing.anchor + (Math.floor((at - timing.anchor) / timing.everyMillis) + 1) * timing.everyMillis
}

/**
 * The first tick at or after `at`.
 *
 * @category internal
 * @since 0.1.0
 */
export const firstFrom = (timing: Timing, at: number): number => nextAfter(timing, at - 1)

/** How many cron ticks are stepped through forwards before the most recent ones are found backwards instead. */
const maxSteps = 10_000

/**
 * The ticks in `[from, now]`, where `from` is itself a tick (a schedule's
 * next tick, as `nextAfter` answered it): the most recent `limit` of them,
 * in time order, and how many there are in all (at least that many, after a
 * very long stretch of cron ticks). A cron's ticks are stepped forwards from
 * `from` with `nextAfter` — never looked for again around `from`, since
 * near a skipped local time effect's `Cron` may not answer the nearest tick
 * for an instant just before it.
 *
 * @category internal
 * @since 0.1.0
 */
export const due = (timing: Timing, from: number, now: number, limit: number): { readonly ticks: ReadonlyArray<number>; readonly total: number } => {
  if (now < from) return { ticks: [], total: 0 }
  if (timing._tag === "Every") {
    const { anchor, everyMillis } = timing
    const first = Math.max(0, Math.ceil((from - anchor) / everyMillis))
    const last = Math.floor((now - anchor) / everyMillis)
    if (last < first) return { ticks: [], total: 0 }
    const total = last - first + 1
    const ticks: Array<number> = []
    for (let k = Math.max(first, last - limit + 1); k <= last; k++) ticks.push(anchor + k * everyMillis)
    return { ticks, total }
  }
  const ticks: Array<number> = []
  let total = 0
  let t = from
  while (t <= now) {
    total++
    ticks.push(t)
    if (ticks.length > limit) ticks.shift()
    if (total >= maxSteps) return { ticks: recentCronTicks(timing, from, now, limit), total }
    t = nextAfter(timing, t)
  }
  return { ticks, total }
}

/** The most recent `limit` cron ticks in `[from, now]`, found backwards from `now`. */
const recentCronTicks = (timing: Extract<Timing, { _tag: "Cron" }>, from: number, now: number, limit: number): ReadonlyArray<number> => {
  const cron = cronOf(timing)
  const ticks: Array<number> = []
  let at = now + 1
  while (ticks.length < limit) {
    const t = Cron.prev(cron, at).getTime()
    if (t < from) break
    ticks.unshift(t)
    at = t
  }
  return ticks
}
