/**
 * Running a baton instance as a Node process: `runMain` builds the app's
 * Layer, waits for SIGTERM or SIGINT, then closes the instance gracefully —
 * the sweep stops, running passes get `timeout` to finish, and what is left
 * is interrupted: each pass releases its tree's lease (the tree stays
 * Running), so another instance takes it at once instead of after a lease
 * expiry. A second signal stops at once. The process exits 0 after a
 * graceful stop, 1 if the app failed.
 *
 * For a pod: keep `timeout` below the orchestrator's grace period
 * (Kubernetes' `terminationGracePeriodSeconds`, 30 s by default).
 *
 * @since 0.1.0
 */
import { Cause, Duration, Effect, Exit, Layer } from "effect"
import * as Baton from "../runtime/Baton.ts"
import type { BatonConfigError } from "../stores/Errors.ts"
import * as Options from "../stores/internal/options.ts"

/**
 * How `runMain` stops.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunMainOptions {
  /**
   * How long a graceful close may take: 0 to 24 hours (default 25 s; see
   * `Baton.close`). Anything else: `BatonConfigError` at start.
   */
  readonly timeout?: Duration.Input | undefined
  /** The signals that stop the instance (default SIGTERM and SIGINT). */
  readonly signals?: ReadonlyArray<NodeJS.Signals> | undefined
}

/**
 * Waits for the first of `signals`; the listeners go when the wait ends.
 *
 * @category signals
 * @since 0.1.0
 */
export const waitForSignal = (signals: ReadonlyArray<NodeJS.Signals> = ["SIGTERM", "SIGINT"]): Effect.Effect<NodeJS.Signals> =>
  Effect.callback<NodeJS.Signals>((resume) => {
    const handlers = signals.map((signal) => {
      const handler = () => resume(Effect.succeed(signal))
      process.once(signal, handler)
      return [signal, handler] as const
    })
    return Effect.sync(() => handlers.forEach(([signal, handler]) => process.removeListener(signal, handler)))
  })

/** A close's grace: 0 (stop at once) to 24 hours. */
const closeTimeout = Options.duration({ min: 0, max: 24 * 60 * 60 * 1000, example: "25 seconds" })

/**
 * The app's instance, closed gracefully at the first signal: an Effect that
 * ends once the close ended (for apps with their own main).
 *
 * @category running
 * @since 0.1.0
 */
export const closeOnSignal = (options: RunMainOptions = {}): Effect.Effect<NodeJS.Signals, BatonConfigError, Baton.Baton> =>
  Effect.gen(function*() {
    const baton = yield* Baton.Baton
    // Checked now, not at the signal: a bad value found at shutdown would skip the graceful close.
    const timeout = yield* Options.setting("timeout", options.timeout, closeTimeout, 25_000)
    const signal = yield* waitForSignal(options.signals)
    yield* Effect.logInfo(`${signal}: closing instance ${baton.instanceId} (grace ${Duration.format(Duration.millis(timeout))})`)
    yield* Effect.orDie(baton.close({ timeout: Duration.millis(timeout) })) // checked above: close refuses nothing else
    return signal
  })

/**
 * Runs `app` (a Layer providing `Baton`, with everything else the app serves:
 * HTTP, consumers…) until SIGTERM/SIGINT, then closes the instance with
 * `timeout` and exits. A second signal interrupts at once.
 *
 * @category running
 * @since 0.1.0
 */
export const runMain = <ROut, E>(app: Layer.Layer<Baton.Baton | ROut, E>, options: RunMainOptions = {}): void => {
  const program = Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(app)
    yield* Effect.provideContext(closeOnSignal(options), context)
  }))
  const fiber = Effect.runFork(program)
  // The first signal is the close's; a second one stops at once.
  let received = 0
  const counter = () => {
    if (++received >= 2) fiber.interruptUnsafe()
  }
  const signals = options.signals ?? ["SIGTERM", "SIGINT"]
  for (const signal of signals) process.on(signal, counter)
  fiber.addObserver((exit) => {
    for (const signal of signals) process.removeListener(signal, counter)
    if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) {
      console.error(Cause.pretty(exit.cause))
      process.exit(1)
    }
    process.exit(0)
  })
}
