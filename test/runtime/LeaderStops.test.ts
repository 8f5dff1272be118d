/**
 * The leader's two stops, each on its own: a program that never calls
 * `Leadership.check` is interrupted at `confirmedUntil` when its renewals
 * fail; and a program that cannot be interrupted there (it is in an
 * uninterruptible region) gets `LeaseLostError` from `check` once
 * `confirmedUntil` is reached — before its interruption lands. Either stop
 * alone must hold: the other cannot cover for it here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer } from "effect"
import * as Leader from "../../src/runtime/Leader.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects } from "./fixtures.ts"

const harness = Harness.make({ instances: 1, baton: { workflows: [approval(makeSideEffects())] } })

for (const backend of backends) {
  describe(`the leader's stops on ${backend.name}`, () => {
    it.effect("a program that never calls check (a loop of sleeps) is interrupted at confirmedUntil when renewals fail", () =>
      Effect.gen(function*() {
        const h = yield* harness
        const ticks: Array<number> = []
        const ended: Array<{ readonly at: number; readonly interrupted: boolean }> = []
        const sleeper = Effect.gen(function*() {
          while (true) {
            ticks.push(yield* Clock.currentTimeMillis)
            yield* Effect.sleep("1 second")
          }
        }).pipe(Effect.onExit((exit) =>
          Effect.map(Clock.currentTimeMillis, (at) => void ended.push({ at, interrupted: Exit.isFailure(exit) && Exit.hasInterrupts(exit) }))
        ))
        const start = yield* Clock.currentTimeMillis
        yield* h.runIn(0, Leader.run("sleeper", sleeper, { holder: "sleeper-0" }))
        yield* h.advance("15 seconds")
        assert.strictEqual(ticks.length, 16, "it leads and ticks every second")
        // The last confirmed renewal was read at 10 s: confirmedUntil is 40 s.
        yield* h.disconnect(0)
        yield* h.advance("60 seconds")
        assert.deepStrictEqual(ended.map((e) => ({ ...e, at: e.at - start })), [{ at: 40_000, interrupted: true }], "interrupted at confirmedUntil")
        assert.strictEqual(Math.max(...ticks) - start, 39_000, "no tick at or after confirmedUntil")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a leader whose renewals failed gets LeaseLostError from check at confirmedUntil, before its interruption lands", () =>
      Effect.gen(function*() {
        const h = yield* harness
        const checks: Array<{ readonly at: number; readonly outcome: string }> = []
        // Each turn is uninterruptible: the interruption at confirmedUntil cannot land before the turn's check ran.
        const checker = Effect.gen(function*() {
          const leadership = yield* Leader.Leadership
          while (true) {
            yield* Effect.uninterruptible(Effect.gen(function*() {
              yield* Effect.sleep("1 second")
              const exit = yield* Effect.exit(leadership.check)
              checks.push({
                at: yield* Clock.currentTimeMillis,
                outcome: Exit.isSuccess(exit) ? "ok" : String(Exit.findErrorOption(exit).pipe((o) => o._tag === "Some" ? (o.value as { _tag: string })._tag : "?"))
              })
              if (Exit.isFailure(exit)) return yield* exit
            }))
          }
        })
        const start = yield* Clock.currentTimeMillis
        yield* h.runIn(0, Leader.run("checker", checker, { holder: "checker-0" }))
        yield* h.advance("15 seconds")
        yield* h.disconnect(0)
        yield* h.advance("60 seconds")
        const rel = checks.map((c) => ({ at: c.at - start, outcome: c.outcome }))
        assert.isTrue(rel.filter((c) => c.at < 40_000).every((c) => c.outcome === "ok"), "every check before confirmedUntil passes")
        assert.deepStrictEqual(rel.filter((c) => c.at >= 40_000), [{ at: 40_000, outcome: "LeaseLostError" }], "the check at confirmedUntil fails; none passes after it")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
