/**
 * The probes of one instance: liveness (no I/O) and readiness (liveness
 * plus one `ping` per store in its context, each under `Health.pingTimeout`
 * on the Clock), as the reports of `Health`.
 */
import { Clock, Context, Duration, Effect } from "effect"
import { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../../stores/ChildQueueStore.ts"
import type { StoreError } from "../../../stores/Errors.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import { LedgerStore } from "../../../stores/LedgerStore.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RateLimitStore } from "../../../stores/RateLimitStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import { type HealthComponent, pingTimeout, report } from "../../Health.ts"
import type { InstanceShape } from "../Instance.ts"

/**
 * No I/O: Unhealthy while stopping, or when the last sweep ended more than three sweep intervals ago.
 */
export const livenessComponents = (instance: InstanceShape, now: number): ReadonlyArray<HealthComponent> => {
  const life = instance.lifecycle
  const stuckAfter = 3 * instance.config.sweepMillis
  const since = now - (life.lastSweepEndedAt() ?? life.startedAt)
  return [
    life.closed()
      ? { name: "instance", status: "Unhealthy", message: "closed: the scope the Baton Layer was built in has ended; build a new one" }
      : life.stopping()
      ? { name: "instance", status: "Unhealthy", message: "stopping" }
      : { name: "instance", status: "Healthy", message: `instance ${instance.instanceId} running` },
    since > stuckAfter
      ? {
        name: "recovery-sweep",
        status: "Unhealthy",
        message: `stuck: ${
          life.lastSweepEndedAt() === undefined
            ? `the first sweep has not ended in ${Math.round(since / 1000)} s`
            : `the last sweep ended ${Math.round(since / 1000)} s ago`
        } (more than three intervals of ${
          Math.round(instance.config.sweepMillis / 1000)
        } s); a store it waits on may not answer`
      }
      : {
        name: "recovery-sweep",
        status: "Healthy",
        message: life.lastSweepEndedAt() === undefined ? "first sweep running" : `last sweep ended ${Math.round(since / 1000)} s ago`
      }
  ]
}

/**
 * The liveness report of an instance, read now (no I/O).
 */
export const checkLiveness = (instance: InstanceShape) =>
  Effect.map(Clock.currentTimeMillis, (now) => report(livenessComponents(instance, now)))

const stores = [
  ["lease-store", LeaseStore],
  ["record-store", RecordStore],
  ["pause-store", PauseStore],
  ["tree-store", TreeStore],
  ["checkpoint-store", CheckpointStore],
  ["ledger-store", LedgerStore],
  ["rate-limit-store", RateLimitStore],
  ["child-queue-store", ChildQueueStore]
] as const

const ping = (name: string, effect: Effect.Effect<void, StoreError>): Effect.Effect<HealthComponent> =>
  effect.pipe(
    Effect.timeoutOrElse({
      duration: pingTimeout,
      orElse: () => Effect.succeed("timeout" as const)
    }),
    Effect.map((r): HealthComponent =>
      r === "timeout"
        ? { name, status: "Unhealthy", message: `no answer to ping within ${Duration.toMillis(pingTimeout)} ms` }
        : { name, status: "Healthy", message: "ping answered" }
    ),
    Effect.catch((e) => Effect.succeed<HealthComponent>({ name, status: "Unhealthy", message: `ping failed: ${e.message}` }))
  )

/**
 * Liveness, plus every store in the instance's context pinged at once, plus `extra` components (step slots, breakers).
 */
export const checkReadiness = (instance: InstanceShape, extra: Effect.Effect<ReadonlyArray<HealthComponent>> = Effect.succeed([])) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const pings = stores.flatMap(([name, tag]) => {
      const service = Context.getOption(instance.services, tag as never)
      return service._tag === "Some" ? [ping(name, (service.value as { ping: Effect.Effect<void, StoreError> }).ping)] : []
    })
    const answered = yield* Effect.all(pings, { concurrency: "unbounded" })
    return report([...livenessComponents(instance, now), ...answered, ...(yield* extra)])
  })
