/**
 * Schedules: one row per (tenant, schedule id) — what to start (a
 * definition the runtime writes and reads, kept as JSON), whether it is
 * paused, the next tick not fired yet, and what the last tick did (its
 * state, JSON). Every change is a compare-and-set on the row's `version`,
 * so two instances that both think they fire a tick cannot both move the row.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * A kept schedule.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleRow {
  readonly tenantId: TenantId
  readonly scheduleId: string
  /** What the schedule starts and when (JSON; written once by `create`). */
  readonly definition: unknown
  readonly paused: boolean
  /** The instant (epoch ms) of the next tick not yet fired. */
  readonly nextFireAt: number
  /** What the ticks did so far (JSON; null before the first). */
  readonly state: unknown
  /** 1 when created, + 1 on every change. */
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * A schedule to create.
 *
 * @category models
 * @since 0.1.0
 */
export interface NewSchedule {
  readonly tenantId: TenantId
  readonly scheduleId: string
  readonly definition: unknown
  readonly paused: boolean
  readonly nextFireAt: number
  readonly now: number
}

/**
 * A change of a schedule: the fields given are written, with `version` + 1.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduleChange {
  readonly paused?: boolean | undefined
  readonly nextFireAt?: number | undefined
  readonly state?: unknown
}

/**
 * The errors of a schedule store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - keyed by (tenantId, scheduleId); another tenant never sees a row;
 * - `create` inserts when the id is free (`created: true`, version 1, state
 *   null) and otherwise changes nothing and answers the kept row
 *   (`created: false`): of concurrent creates of one id exactly one creates;
 * - `update` writes the change only while the row's version is `expected`,
 *   and answers the new row (version + 1, `updatedAt` = `now`); `None` when
 *   the row is gone or another change came first;
 * - `due(now, limit)` answers at most `limit` rows, of every tenant, not
 *   paused, with `nextFireAt ≤ now`, earliest first (ties by tenant, id);
 * - `nextDue` is the earliest `nextFireAt` of a row not paused;
 * - `list` pages a tenant's rows by id, after `after` when given;
 * - `delete` answers whether a row was deleted;
 * - times are epoch milliseconds from the caller's Clock; values are JSON.
 */
export interface ScheduleStoreShape {
  readonly create: (schedule: NewSchedule) => Effect.Effect<{ readonly created: boolean; readonly schedule: ScheduleRow }, Failure>
  readonly get: (tenantId: TenantId, scheduleId: string) => Effect.Effect<Option.Option<ScheduleRow>, Failure>
  readonly list: (tenantId: TenantId, options: { readonly after?: string | undefined; readonly limit: number }) => Effect.Effect<ReadonlyArray<ScheduleRow>, Failure>
  readonly update: (tenantId: TenantId, scheduleId: string, expected: number, change: ScheduleChange, now: number) => Effect.Effect<Option.Option<ScheduleRow>, Failure>
  readonly due: (now: number, limit: number) => Effect.Effect<ReadonlyArray<ScheduleRow>, Failure>
  readonly nextDue: Effect.Effect<Option.Option<number>, Failure>
  readonly delete: (tenantId: TenantId, scheduleId: string) => Effect.Effect<boolean, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The store of schedules.
 *
 * @category services
 * @since 0.1.0
 */
export class ScheduleStore extends Context.Service<ScheduleStore, ScheduleStoreShape>()("baton/ScheduleStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: ScheduleStoreShape): ScheduleStoreShape => {
  const id = (op: string, tenantId: unknown, scheduleId: unknown) => [V.nonEmpty(op, "tenantId", tenantId), V.nonEmpty(op, "scheduleId", scheduleId)]
  const change = (op: string, c: ScheduleChange): ReadonlyArray<Effect.Effect<void, InvalidInputError>> =>
    typeof c !== "object" || c === null ? [V.json(op, "change", undefined)] : [
      ...(c.paused === undefined ? [] : [V.boolean(op, "change.paused", c.paused)]),
      ...(c.nextFireAt === undefined ? [] : [V.time(op, "change.nextFireAt", c.nextFireAt)]),
      ...("state" in c ? [V.json(op, "change.state", c.state)] : [])
    ]
  return {
    create: (s) =>
      V.checked([
        ...id("ScheduleStore.create", s?.tenantId, s?.scheduleId),
        V.json("ScheduleStore.create", "definition", s?.definition),
        V.boolean("ScheduleStore.create", "paused", s?.paused),
        V.time("ScheduleStore.create", "nextFireAt", s?.nextFireAt),
        V.time("ScheduleStore.create", "now", s?.now)
      ], () => impl.create(s)),
    get: (tenantId, scheduleId) => V.checked(id("ScheduleStore.get", tenantId, scheduleId), () => impl.get(tenantId, scheduleId)),
    list: (tenantId, options) =>
      V.checked([
        V.nonEmpty("ScheduleStore.list", "tenantId", tenantId),
        ...(options?.after === undefined ? [] : [V.nonEmpty("ScheduleStore.list", "after", options.after)]),
        V.wholeAtLeast("ScheduleStore.list", "limit", options?.limit, 1)
      ], () => impl.list(tenantId, options)),
    update: (tenantId, scheduleId, expected, c, now) =>
      V.checked([
        ...id("ScheduleStore.update", tenantId, scheduleId),
        V.wholeAtLeast("ScheduleStore.update", "expected", expected, 1),
        ...change("ScheduleStore.update", c),
        V.time("ScheduleStore.update", "now", now)
      ], () => impl.update(tenantId, scheduleId, expected, c, now)),
    due: (now, limit) =>
      V.checked([V.time("ScheduleStore.due", "now", now), V.wholeAtLeast("ScheduleStore.due", "limit", limit, 1)], () => impl.due(now, limit)),
    nextDue: impl.nextDue,
    delete: (tenantId, scheduleId) => V.checked(id("ScheduleStore.delete", tenantId, scheduleId), () => impl.delete(tenantId, scheduleId)),
    ping: impl.ping
  }
}
