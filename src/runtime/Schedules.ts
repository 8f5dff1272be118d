/**
 * Fleet-wide schedules: start a workflow on a cron expression (in an IANA
 * time zone) or at a fixed interval, with one execution per tick however
 * many instances run.
 *
 * `Schedules` is the API (create, get, list, pause, resume, delete),
 * tenant-scoped and owner-checked like `Baton`'s reads, over the
 * `ScheduleStore` the store bundles provide. The ticks are fired by the
 * `Baton` runtime itself: every instance whose stores include a
 * `ScheduleStore` campaigns for the `baton/schedules` leader, and the leader
 * starts each due tick under a request key made of the schedule id and the
 * tick's instant, so a tick fired twice (a leader lost mid-tick, a frozen one
 * thawed) still answers one execution. Each tick runs on a new thread.
 *
 * - Missed ticks (every instance down, or a failover longer than `grace`):
 *   `missed: "skip"` fires none, `"one"` one for the stretch, `"all"` each of
 *   the latest `maxCatchUp`.
 * - A tick while the previous tick's execution still runs (Running or
 *   Paused): `overlap: "skip"` starts nothing, `"allow"` starts another,
 *   `"cancel"` cancels the previous one first.
 * - Daylight-saving changes follow effect's `Cron`: a skipped local time
 *   fires one gap later, a repeated one once (its first occurrence) unless
 *   `dstOverlap` says `"later"` or `"both"`.
 * - A paused schedule fires nothing; `resume` goes on from the next tick
 *   (the ticks of the pause are not caught up).
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { InvalidInputError, StoreError } from "../stores/Errors.ts"
import { defaultTenant } from "../stores/Ids.ts"
import * as V from "../stores/internal/validate.ts"
import { type ScheduleChange, type ScheduleRow, ScheduleStore, type ScheduleStoreShape } from "../stores/ScheduleStore.ts"
import { type ScheduleError, ScheduleExistsError, ScheduleOwnerError, UnknownScheduleError } from "./Errors.ts"
import * as Changes from "./internal/schedules/Changes.ts"
import * as Definition from "./internal/schedules/Definition.ts"
import * as Timing from "./internal/schedules/Timing.ts"
import type { Workflow } from "./Workflow.ts"

export type { Definition as ScheduleDefinition, MissedTicks, Overlap, ScheduleOptions, ScheduleView, TickState } from "./internal/schedules/Definition.ts"
export type { Timing } from "./internal/schedules/Timing.ts"

/**
 * Who a call acts for.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleScope {
  readonly tenantId?: string | undefined
  readonly ownerId?: string | undefined
}

/**
 * The options of `Schedules.list`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleListOptions extends ScheduleScope {
  /** The `next` of the page before. */
  readonly cursor?: string | undefined
  /** 1 to 1000; default 100. */
  readonly limit?: number | undefined
}

/**
 * One page of a tenant's schedules, by id; `next` is the cursor of the next page (null on the last).
 *
 * @category models
 * @since 0.1.0
 */
export interface SchedulePage {
  readonly schedules: ReadonlyArray<Definition.ScheduleView>
  readonly next: string | null
}

/**
 * What the schedules API offers.
 *
 * @category models
 * @since 0.1.0
 */
export interface SchedulesShape {
  /**
   * Creates the schedule `scheduleId` (1–160 characters, per tenant) that
   * starts `workflow` on `input` at each tick. A create of an id that exists
   * with the same definition answers the kept schedule (safe at every boot
   * of the app); with another definition it is `ScheduleExistsError`. Bad
   * options are `InvalidInputError` naming the field, nothing written.
   */
  readonly create: <I>(
    scheduleId: string,
    workflow: Workflow<I, any, any, any>,
    input: I,
    options: Definition.ScheduleOptions
  ) => Effect.Effect<Definition.ScheduleView, ScheduleError>
  readonly get: (scheduleId: string, options?: ScheduleScope) => Effect.Effect<Definition.ScheduleView, ScheduleError>
  /** A page of the tenant's schedules the caller may see (those of its owner, and those without one). */
  readonly list: (options?: ScheduleListOptions) => Effect.Effect<SchedulePage, ScheduleError>
  /** Stops firing; the schedule and its state are kept. Pausing a paused schedule changes nothing. */
  readonly pause: (scheduleId: string, options?: ScheduleScope) => Effect.Effect<Definition.ScheduleView, ScheduleError>
  /** Fires again from the first tick after now (the ticks of the pause are not caught up). Resuming a running schedule changes nothing. */
  readonly resume: (scheduleId: string, options?: ScheduleScope) => Effect.Effect<Definition.ScheduleView, ScheduleError>
  /** Deletes the schedule (executions it started go on). */
  readonly delete: (scheduleId: string, options?: ScheduleScope) => Effect.Effect<{ readonly deleted: true }, ScheduleError>
}

/** The tenant a call acts for, checked. */
const tenantOf = (operation: string, options: ScheduleScope | undefined) =>
  Effect.gen(function*() {
    if (options !== undefined && (typeof options !== "object" || options === null)) {
      return yield* new InvalidInputError({ operation, field: "options", reason: "must be an object such as { tenantId, ownerId }" })
    }
    const tenantId = options?.tenantId ?? defaultTenant
    yield* V.nonEmpty(operation, "tenantId", tenantId)
    if (options?.ownerId !== undefined) yield* V.nonEmpty(operation, "ownerId", options.ownerId)
    return tenantId
  })

/** The schedule, when it exists for the tenant and the caller's owner may act on it. */
const owned = (store: ScheduleStoreShape, operation: string, scheduleId: string, options: ScheduleScope | undefined) =>
  Effect.gen(function*() {
    const tenantId = yield* tenantOf(operation, options)
    yield* Definition.checkId(operation, scheduleId)
    const row = yield* store.get(tenantId, scheduleId)
    if (Option.isNone(row)) return yield* new UnknownScheduleError({ tenantId, scheduleId })
    const owner = Definition.definitionOf(row.value).ownerId
    if (owner !== null && owner !== options?.ownerId) return yield* new ScheduleOwnerError({ tenantId, scheduleId, ownerId: options?.ownerId })
    return row.value
  })

/** A change of the schedule by compare-and-set, read again when another change came first. */
const changed = (
  store: ScheduleStoreShape,
  operation: string,
  scheduleId: string,
  options: ScheduleScope | undefined,
  change: (row: ScheduleRow, now: number) => ScheduleChange | undefined
) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 8; attempt++) {
      const row = yield* owned(store, operation, scheduleId, options)
      const now = yield* Clock.currentTimeMillis
      const wanted = change(row, now)
      if (wanted === undefined) return Definition.viewOf(row)
      const moved = yield* store.update(row.tenantId, row.scheduleId, row.version, wanted, now)
      if (Option.isSome(moved)) return Definition.viewOf(moved.value)
    }
    return yield* new StoreError({ store: "ScheduleStore", operation: "update", kind: "Busy", reason: `schedule ${scheduleId} kept changing under ${operation}: try again` })
  })

/**
 * The API over a `ScheduleStore`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeWith = (store: ScheduleStoreShape): SchedulesShape => ({
  create: (scheduleId, workflow, input, options) =>
    Effect.gen(function*() {
      const op = "Schedules.create"
      const tenantId = yield* tenantOf(op, options)
      yield* Definition.checkId(op, scheduleId)
      const now = yield* Clock.currentTimeMillis
      const made = yield* Definition.make(workflow, input, options ?? {}, now)
      const result = yield* store.create({ tenantId, scheduleId, definition: made.definition, paused: made.paused, nextFireAt: made.nextFireAt, now })
      if (!result.created) {
        const kept = Definition.definitionOf(result.schedule)
        if (!Definition.sameAs(kept, made.definition, options?.startAt !== undefined)) return yield* new ScheduleExistsError({ tenantId, scheduleId })
      }
      yield* Changes.notify
      return Definition.viewOf(result.schedule)
    }),
  get: (scheduleId, options) => Effect.map(owned(store, "Schedules.get", scheduleId, options), Definition.viewOf),
  list: (options) =>
    Effect.gen(function*() {
      const op = "Schedules.list"
      const tenantId = yield* tenantOf(op, options)
      const limit = options?.limit ?? 100
      if (!(Number.isInteger(limit) && limit >= 1 && limit <= 1000)) {
        return yield* new InvalidInputError({ operation: op, field: "limit", reason: `must be a whole number from 1 to 1000 (got ${V.shown(limit)})` })
      }
      if (options?.cursor !== undefined) yield* V.nonEmpty(op, "cursor", options.cursor)
      const rows = yield* store.list(tenantId, { after: options?.cursor, limit })
      const visible = rows.filter((r) => {
        const owner = Definition.definitionOf(r).ownerId
        return owner === null || owner === options?.ownerId
      })
      return { schedules: visible.map(Definition.viewOf), next: rows.length === limit ? rows[rows.length - 1]!.scheduleId : null }
    }),
  pause: (scheduleId, options) => changed(store, "Schedules.pause", scheduleId, options, (row) => (row.paused ? undefined : { paused: true })),
  resume: (scheduleId, options) =>
    Effect.tap(
      changed(store, "Schedules.resume", scheduleId, options, (row, now) =>
        row.paused ? { paused: false, nextFireAt: Timing.nextAfter(Definition.definitionOf(row).timing, now) } : undefined),
      () => Changes.notify
    ),
  delete: (scheduleId, options) =>
    Effect.gen(function*() {
      const row = yield* owned(store, "Schedules.delete", scheduleId, options)
      if (!(yield* store.delete(row.tenantId, row.scheduleId))) return yield* new UnknownScheduleError({ tenantId: row.tenantId, scheduleId })
      return { deleted: true } as const
    })
})

/**
 * The schedules API, as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class Schedules extends Context.Service<Schedules, SchedulesShape>()("baton/Schedules") {}

/**
 * The API over the `ScheduleStore` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<SchedulesShape, never, ScheduleStore> = Effect.gen(function*() {
  return makeWith(yield* ScheduleStore)
})

/**
 * The API over the `ScheduleStore` in context, as a Layer (the memory, SQLite and Postgres bundles provide the store).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<Schedules, never, ScheduleStore> = Layer.effect(Schedules)(make)
