/**
 * Assertions on `StoreError` shared by the backends' error tests.
 */
import { assert } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import type { StoreError } from "../src/stores/Errors.ts"

/** Runs `effect`, which must fail with a `StoreError`; answers it. */
export const storeFailure = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    const error = Option.getOrThrow(Exit.findErrorOption(exit)) as unknown as StoreError
    assert.strictEqual(error._tag, "StoreError")
    return error
  })

/** `error` is of `kind`, permanent, and its message says so (never "can be retried"). */
export const assertPermanent = (error: StoreError, kind: StoreError["kind"]) => {
  assert.strictEqual(error.kind, kind)
  assert.isFalse(error.transient)
  assert.include(error.message, "Permanent")
  assert.notInclude(error.message, "can be retried")
}

/** `error` is of `kind`, transient, and its message says the call can be retried. */
export const assertTransient = (error: StoreError, kind: StoreError["kind"]) => {
  assert.strictEqual(error.kind, kind)
  assert.isTrue(error.transient)
  assert.include(error.message, "can be retried")
}
