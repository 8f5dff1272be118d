/**
 * The wake-ups over the shards (each bundle's `LeaseWakeups` and
 * `EventWakeups`: Postgres NOTIFY, or the process's hub): a release or an
 * append is told on its tenant's shard, a wait for one tenant's tree or
 * thread waits on that shard, and a wait for any release (the sweeps, the
 * child workers) waits on every shard at once. A shard not built yet (down)
 * is waited on through the process's own hub. The reserved tenant's
 * releases (the leaders' leases, one per shard) are told on every shard and
 * waited for on every shard: a leader's campaign wakes on any of them and
 * finds its own shard's lease as it is.
 */
import { Context, Effect } from "effect"
import { EventWakeups, type EventWakeupsShape } from "../../../src/stores/EventWakeups.ts"
import { LeaseWakeups, type LeaseWakeupsShape } from "../../../src/stores/LeaseWakeups.ts"
import { reservedTenant, type Router } from "./router.ts"

const of = <S, A>(router: Router<S>, fallback: A, key: Context.Reference<A>) => {
  const at = (tenantId: string | undefined): A => {
    if (tenantId === undefined) return fallback
    const shard = Effect.runSync(Effect.orElseSucceed(router.shardOf("Wakeups", "route", tenantId), () => undefined))
    const built = shard?.built()
    return built === undefined ? fallback : Context.get(built as Context.Context<never>, key)
  }
  const all = (): ReadonlyArray<A> => [
    ...new Set([fallback, ...router.shards.flatMap((s) => {
      const built = s.built()
      return built === undefined ? [] : [Context.get(built as Context.Context<never>, key)]
    })])
  ]
  return { at, all }
}

/** The `LeaseWakeups` over the shards (`fallback`: the process's own). */
export const leaseWakeups = <S>(router: Router<S>, fallback: LeaseWakeupsShape): LeaseWakeupsShape => {
  const hubs = of(router, fallback, LeaseWakeups)
  return {
    released: (tenantId, rootExecutionId, options) =>
      tenantId === reservedTenant
        ? hubs.all().forEach((hub) => hub.released(tenantId, rootExecutionId, options))
        : hubs.at(tenantId).released(tenantId, rootExecutionId, options),
    next: (tenantId, rootExecutionId, options) =>
      tenantId !== undefined && tenantId !== reservedTenant
        ? hubs.at(tenantId).next(tenantId, rootExecutionId, options)
        : Effect.raceAll(hubs.all().map((hub) => hub.next(tenantId, rootExecutionId, options)))
  }
}

/** The `EventWakeups` over the shards (`fallback`: the process's own). */
export const eventWakeups = <S>(router: Router<S>, fallback: EventWakeupsShape): EventWakeupsShape => {
  const hubs = of(router, fallback, EventWakeups)
  return {
    appended: (tenantId, threadId) => hubs.at(tenantId).appended(tenantId, threadId),
    next: (tenantId, threadId) => hubs.at(tenantId).next(tenantId, threadId)
  }
}
