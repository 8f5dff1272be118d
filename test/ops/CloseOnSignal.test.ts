/**
 * `BatonProcess.closeOnSignal` (and so `runMain`) checks its options when it
 * starts, not when the signal comes: a timeout that is not a duration fails
 * at once with `BatonConfigError` naming it, instead of a defect at shutdown
 * that skipped the graceful close.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { BatonProcess } from "../../src/http/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import { expectTag } from "../../src/testing/conformance/Suite.ts"
import { approval, makeSideEffects, memoryStores } from "../runtime/fixtures.ts"

const instance = Baton.layer({ workflows: [approval(makeSideEffects())] }).pipe(Layer.provide(Layer.fresh(memoryStores)))

describe("BatonProcess.closeOnSignal", () => {
  it.effect("a timeout that is not a duration ≥ 0 fails at once, naming it, with no signal sent", () =>
    Effect.gen(function*() {
      for (const timeout of ["25s", -1, Number.NaN] as const) {
        const error = yield* expectTag(BatonProcess.closeOnSignal({ timeout: timeout as never, signals: ["SIGUSR2"] }), "BatonConfigError", `timeout ${timeout}`)
        assert.strictEqual(error.field, "timeout")
        assert.include(String(error.message), "25 seconds")
      }
    }).pipe(Effect.provide(instance)))
})
