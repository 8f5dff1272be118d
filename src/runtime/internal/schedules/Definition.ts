/**
 * What a schedule row keeps (its definition and the state of its ticks, as
 * JSON in the `ScheduleStore`), how `Schedules.create`'s options become a
 * definition — every option checked by the options parser, naming the field —
 * and the view the API answers.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Result } from "effect"
import { InvalidInputError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"
import * as V from "../../../stores/internal/validate.ts"
import type { ScheduleRow } from "../../../stores/ScheduleStore.ts"
import * as Workflow from "../../Workflow.ts"
import * as Timing from "./Timing.ts"

/**
 * What happens to ticks that came while no instance could fire them (all
 * down, the schedule's leader failing over for longer than `grace`):
 * `"skip"` fires none of them, `"one"` fires one execution for the whole
 * stretch (its latest tick), `"all"` fires each (the latest `maxCatchUp`).
 *
 * @category models
 * @since 0.1.0
 */
export type MissedTicks = "skip" | "one" | "all"

/**
 * What a tick does while the execution of the previous tick still runs
 * (Running or Paused): `"skip"` starts nothing, `"allow"` starts another,
 * `"cancel"` cancels the previous one and starts.
 *
 * @category models
 * @since 0.1.0
 */
export type Overlap = "skip" | "allow" | "cancel"

/**
 * A schedule's definition, kept as JSON in its row.
 *
 * @category models
 * @since 0.1.0
 */
export interface Definition {
  readonly workflow: string
  readonly input: unknown
  readonly ownerId: string | null
  /** The cron expression, time zone and repeated-time rule; or the interval and its anchor. */
  readonly timing: Timing.Timing
  readonly missed: MissedTicks
  readonly maxCatchUp: number
  readonly graceMillis: number
  readonly overlap: Overlap
}

/**
 * What the ticks of a schedule did, kept as JSON in its row.
 *
 * @category models
 * @since 0.1.0
 */
export interface TickState {
  readonly lastTickAt: number | null
  readonly lastExecutionId: string | null
  readonly lastThreadId: string | null
  /** `Started`, `Skipped` (the previous run still ran, under overlap "skip"), or `Failed` (the start was refused: `lastError`). */
  readonly lastOutcome: "Started" | "Skipped" | "Failed" | null
  readonly lastError: string | null
  /** Ticks that started an execution. */
  readonly started: number
  /** Ticks that started none: missed (policy), overlapping (policy) or refused. */
  readonly notStarted: number
}

/**
 * The state of a schedule no tick reached yet.
 *
 * @category constants
 * @since 0.1.0
 */
export const initialState: TickState = {
  lastTickAt: null,
  lastExecutionId: null,
  lastThreadId: null,
  lastOutcome: null,
  lastError: null,
  started: 0,
  notStarted: 0
}

/**
 * A row's tick state (the initial one before any tick).
 *
 * @category internal
 * @since 0.1.0
 */
export const stateOf = (row: ScheduleRow): TickState => (row.state === null || typeof row.state !== "object" ? initialState : { ...initialState, ...(row.state as TickState) })

/**
 * A row's definition.
 *
 * @category internal
 * @since 0.1.0
 */
export const definitionOf = (row: ScheduleRow): Definition => row.definition as Definition

/**
 * The options of `Schedules.create`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleOptions {
  readonly tenantId?: string | undefined
  /** The owner of the schedule and of the threads its ticks start; checked like a thread's owner on every call. */
  readonly ownerId?: string | undefined
  /** A cron expression (5 fields, or 6 with seconds first), read in `timeZone`. Exactly one of `cron` and `every`. */
  readonly cron?: string | undefined
  /** An IANA time zone name for `cron` (default `"UTC"`). */
  readonly timeZone?: string | undefined
  /** Which occurrence of a local time repeated by a daylight-saving change fires: `"earlier"` (default), `"later"` or `"both"`. */
  readonly dstOverlap?: "earlier" | "later" | "both" | undefined
  /** A fixed interval (1 second to 366 days). Exactly one of `cron` and `every`. */
  readonly every?: Duration.Input | undefined
  /** With `every`: the instant (epoch ms) of the first tick; default one interval after the create. */
  readonly startAt?: number | undefined
  /** Missed ticks: `"skip"` (default), `"one"` or `"all"` (see `MissedTicks`). */
  readonly missed?: MissedTicks | undefined
  /** The most ticks one look fires for a schedule (the latest): 1 to 1000, default 10. */
  readonly maxCatchUp?: number | undefined
  /** How late a tick may fire and still count as on time, not missed: 0 to 1 day, default 1 minute. */
  readonly grace?: Duration.Input | undefined
  /** A tick while the previous run still runs: `"skip"` (default), `"allow"` or `"cancel"`. */
  readonly overlap?: Overlap | undefined
  /** Create it paused (default false). */
  readonly paused?: boolean | undefined
}

const op = "Schedules.create"
const day = 24 * 60 * 60 * 1000
const optionFields = Options.fieldsOf<ScheduleOptions>({
  tenantId: true,
  ownerId: true,
  cron: true,
  timeZone: true,
  dstOverlap: true,
  every: true,
  startAt: true,
  missed: true,
  maxCatchUp: true,
  grace: true,
  overlap: true,
  paused: true
})

/**
 * The longest schedule id: a tick's request key is `@baton/schedule/<id>/<instant>`, at most 200 characters.
 *
 * @category constants
 * @since 0.1.0
 */
export const maxScheduleIdLength = 160

/**
 * A schedule id checked: a non-empty storable id of at most `maxScheduleIdLength` characters.
 *
 * @category internal
 * @since 0.1.0
 */
export const checkId = (operation: string, scheduleId: unknown): Effect.Effect<string, InvalidInputError> =>
  Effect.andThen(V.nonEmpty(operation, "scheduleId", scheduleId), () =>
    (scheduleId as string).length > maxScheduleIdLength
      ? Effect.fail(new InvalidInputError({ operation, field: "scheduleId", reason: `must be at most ${maxScheduleIdLength} characters (got ${(scheduleId as string).length})` }))
      : Effect.succeed(scheduleId as string))

const invalid = (field: string, reason: string) => new InvalidInputError({ operation: op, field, reason })

/** The timing the options ask for, checked. */
const timingOf = (options: ScheduleOptions, now: number): Effect.Effect<Timing.Timing, InvalidInputError> =>
  Effect.gen(function*() {
    if ((options.cron === undefined) === (options.every === undefined)) {
      return yield* invalid("cron", "or `every` must be given, exactly one of them (a cron expression such as \"0 9 * * *\", or an interval such as \"15 minutes\")")
    }
    if (options.cron !== undefined) {
      const expression = yield* Options.argument(op, "cron", options.cron, Options.text({ minLength: 1, maxLength: 200 }), "")
      const timeZone = yield* Options.argument(op, "timeZone", options.timeZone, Options.text({ minLength: 1, maxLength: 100 }), "UTC")
      const dstOverlap = yield* Options.argument(op, "dstOverlap", options.dstOverlap, Options.oneOf(["earlier", "later", "both"] as const), "earlier" as const)
      const parsed = Timing.parseCron(expression, timeZone, dstOverlap)
      if (Result.isFailure(parsed)) {
        return yield* (/time zone/i.test(parsed.failure)
          ? invalid("timeZone", `is ${JSON.stringify(timeZone)}, which is not an IANA time zone name (e.g. "Europe/Berlin")`)
          : invalid("cron", `is ${JSON.stringify(expression)}: ${parsed.failure} (e.g. "0 9 * * 1-5", five fields, or six with seconds first)`))
      }
      if (options.startAt !== undefined) return yield* invalid("startAt", "is for `every` schedules only (a cron's ticks follow its expression)")
      return { _tag: "Cron", expression, timeZone, dstOverlap } as const
    }
    if (options.timeZone !== undefined || options.dstOverlap !== undefined) {
      return yield* invalid(options.timeZone !== undefined ? "timeZone" : "dstOverlap", "is for `cron` schedules only (an interval counts elapsed time)")
    }
    const everyMillis = yield* Options.argument(op, "every", options.every, Options.duration({ min: 1_000, max: 366 * day, example: "15 minutes" }), 0)
    const anchor = yield* Options.argument(op, "startAt", options.startAt, Options.whole({ min: 0, max: 8.64e15 }), now + everyMillis)
    return { _tag: "Every", everyMillis, anchor } as const
  })

/** The input as an execution gets it: decoded by the workflow's schema, an object, storable as JSON. */
const inputOf = (workflow: Workflow.AnyWorkflow, input: unknown) =>
  Effect.flatMap(Workflow.decode(workflow, "input", input, op), (decoded) =>
    typeof decoded !== "object" || decoded === null || Array.isArray(decoded)
      ? Effect.fail(invalid("input", "must be the graph's first state update (an object such as {})"))
      : Effect.as(V.json(op, "input", decoded), decoded))

/**
 * The definition `Schedules.create`'s arguments ask for and the instant of
 * its first tick, or an `InvalidInputError` naming the field.
 *
 * @category internal
 * @since 0.1.0
 */
export const make = (workflow: Workflow.AnyWorkflow, input: unknown, options: ScheduleOptions, now: number) =>
  Effect.gen(function*() {
    yield* Effect.mapError(Options.refuseUnknown(options, optionFields), Options.asArgument(op))
    if (typeof workflow?.name !== "string") return yield* invalid("workflow", "must be a workflow made with Workflow.make")
    if (options.ownerId !== undefined) yield* V.nonEmpty(op, "ownerId", options.ownerId)
    const timing = yield* timingOf(options, now)
    const definition: Definition = {
      workflow: workflow.name,
      input: yield* inputOf(workflow, input),
      ownerId: options.ownerId ?? null,
      timing,
      missed: yield* Options.argument(op, "missed", options.missed, Options.oneOf(["skip", "one", "all"] as const), "skip" as const),
      maxCatchUp: yield* Options.argument(op, "maxCatchUp", options.maxCatchUp, Options.whole({ min: 1, max: 1000 }), 10),
      graceMillis: yield* Options.argument(op, "grace", options.grace, Options.duration({ min: 0, max: day, example: "1 minute" }), 60_000),
      overlap: yield* Options.argument(op, "overlap", options.overlap, Options.oneOf(["skip", "allow", "cancel"] as const), "skip" as const)
    }
    const paused = yield* Options.argument(op, "paused", options.paused, Options.boolean, false)
    return { definition, paused, nextFireAt: Timing.nextAfter(timing, now) }
  })

/**
 * Whether a kept definition is the one asked for again (an interval whose
 * first tick was not given keeps its own anchor: a create at every boot of
 * the app finds its schedule, not a conflict).
 *
 * @category internal
 * @since 0.1.0
 */
export const sameAs = (kept: Definition, wanted: Definition, anchorGiven: boolean): boolean => {
  const strip = (d: Definition) =>
    d.timing._tag === "Every" && !anchorGiven ? { ...d, timing: { ...d.timing, anchor: 0 } } : d
  return JSON.stringify(canonical(strip(kept))) === JSON.stringify(canonical(strip(wanted)))
}

/** A JSON value with its object keys sorted. */
const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : value !== null && typeof value === "object"
    ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
    : value

/**
 * A schedule as the API answers it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleView extends Definition, TickState {
  readonly tenantId: string
  readonly scheduleId: string
  readonly paused: boolean
  /** The next tick not fired yet (epoch ms): when the schedule next starts (or, if due, is about to). */
  readonly nextFireAt: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * The view of a row.
 *
 * @category internal
 * @since 0.1.0
 */
export const viewOf = (row: ScheduleRow): ScheduleView => {
  const d = definitionOf(row)
  return {
    tenantId: row.tenantId,
    scheduleId: row.scheduleId,
    workflow: d.workflow,
    input: d.input,
    ownerId: d.ownerId,
    timing: d.timing,
    missed: d.missed,
    maxCatchUp: d.maxCatchUp,
    graceMillis: d.graceMillis,
    overlap: d.overlap,
    paused: row.paused,
    nextFireAt: row.nextFireAt,
    ...stateOf(row),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt
  }
}

/**
 * Which due ticks fire, by the missed-tick policy: those on time (at most
 * `grace` late) always; of the missed ones, none, the latest, or all (the
 * due list holds at most `maxCatchUp`, the latest).
 *
 * @category internal
 * @since 0.1.0
 */
export const toFire = (d: Definition, ticks: ReadonlyArray<number>, now: number): ReadonlyArray<number> => {
  const missed = ticks.filter((t) => now - t > d.graceMillis)
  const onTime = ticks.filter((t) => now - t <= d.graceMillis)
  switch (d.missed) {
    case "skip":
      return onTime
    case "one":
      return missed.length === 0 ? onTime : [missed[missed.length - 1]!, ...onTime]
    case "all":
      return ticks
  }
}

/**
 * The request key of a tick: every start of the tick, by any instance, answers one execution.
 *
 * @category internal
 * @since 0.1.0
 */
export const tickKey = (scheduleId: string, tickAt: number): string => `@baton/schedule/${scheduleId}/${tickAt}`
