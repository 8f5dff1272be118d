/**
 * The `close` program: a graceful stop of one instance within a timeout.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import { InstanceStoppingError } from "../../Errors.ts"
import * as V from "../../../stores/internal/validate.ts"
import { Instance } from "../Instance.ts"
import * as Passes from "../pass/Passes.ts"

/**
 * How long `Baton.close` may take.
 *
 * @category models
 * @since 0.1.0
 */
export interface CloseOptions {
  /** Default 25 s; 0 stops at once. Not a duration ≥ 0: `InvalidInputError`, and nothing stops. */
  readonly timeout?: Duration.Input | undefined
}

/** Waits until no pass of the instance runs. */
const passesGone: Effect.Effect<void, never, Instance> = Effect.flatMap(Effect.service(Instance), (instance) =>
  instance.passes.active.size === 0 ? Effect.void : Effect.andThen(instance.passes.ended, passesGone))

/** Waits until no pass runs, or until the clock reads `at`. */
const passesGoneBy = (at: number) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.raceFirst(passesGone, Effect.sleep(Duration.millis(Math.max(0, at - now)))))

/** Aborts what still runs (each pass releases its lease once its step bodies returned, and stays Running). */
const interruptPasses = Effect.fnUntraced(function*() {
  const instance = yield* Instance
  yield* Effect.logInfo(`closing: interrupting ${instance.passes.active.size} running passes; they stay running for another instance`)
  for (const pass of instance.passes.active) pass.abort(new InstanceStoppingError({ instanceId: instance.instanceId }))
})

/**
 * The instance's `close`: stops the sweep, waits for running passes, and a
 * grace before `timeout` (min(5 s, 20 %)) interrupts what is left.
 * Background waits live in `closeScope`, the instance's scope.
 *
 * @category internal
 * @since 0.1.0
 */
export const close = (sweep: Fiber.Fiber<unknown, unknown>, closeScope: Scope.Scope) => (options?: CloseOptions) =>
  Effect.gen(function*() {
    const timeoutMillis = options?.timeout === undefined ? 25_000 : yield* V.durationMillis("Baton.close", "timeout", options.timeout)
    const instance = yield* Instance
    const graceMillis = Math.min(5_000, timeoutMillis * 0.2)
    const startedAt = yield* Clock.currentTimeMillis
    instance.lifecycle.stop()
    // Whatever happens below, nothing waits for step bodies past the timeout.
    yield* Effect.forkIn(
      Effect.andThen(Effect.sleep(Duration.millis(timeoutMillis)), Deferred.succeed(instance.lifecycle.closeDeadline, undefined)),
      closeScope
    )
    // The loop stops; the recoveries it started are passes like the others, waited for below.
    yield* Fiber.interrupt(sweep)
    yield* passesGoneBy(startedAt + timeoutMillis - graceMillis)
    if (instance.passes.active.size > 0) {
      yield* interruptPasses()
      yield* passesGoneBy(startedAt + timeoutMillis)
    }
    yield* Deferred.succeed(instance.lifecycle.closeDeadline, undefined)
    for (const pass of instance.passes.active) {
      yield* Effect.logWarning(
        `closing: execution ${pass.rootExecutionId} still has ${pass.bodies.size} step bodies running: ${Passes.runningBodies(pass).join(", ")}`
      )
    }
  }).pipe(Effect.withSpan("Baton.close"))
