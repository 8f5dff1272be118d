import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { Baton } from "../../src/runtime/Baton.ts"
import type { BatonOptions } from "../../src/runtime/BatonConfig.ts"
import { Instance } from "../../src/runtime/internal/Instance.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { makeSideEffects, memoryStores, slow } from "./fixtures.ts"

const wf = slow(makeSideEffects())

const buildWith = (options: BatonOptions) =>
  Layer.build(Baton.layer(options)).pipe(Effect.provide(Layer.fresh(memoryStores)), Effect.scoped, Effect.exit)

const failedField = (exit: Exit.Exit<unknown, { readonly _tag: string; readonly field?: string }>) => {
  assert.isTrue(Exit.isFailure(exit), "the Layer must fail to build")
  const error = Exit.isFailure(exit) ? Exit.findErrorOption(exit) : undefined
  assert.strictEqual(error?._tag === "Some" ? error.value._tag : undefined, "BatonConfigError")
  return error?._tag === "Some" ? error.value.field : undefined
}

describe("Baton.layer configuration", () => {
  it.effect("bad values fail at build, naming the field", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], lease: "0 seconds" })), "lease")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], lease: "10 seconds", renewEvery: "10 seconds" })), "renewEvery")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], sweepInterval: -5 })), "sweepInterval")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], pauseRetention: "forever" as never })), "pauseRetention")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], sweepPageSize: 0 })), "sweepPageSize")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], instanceId: "" })), "instanceId")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf, wf] })), "workflows")
      assert.strictEqual(failedField(yield* buildWith({ workflows: undefined as never })), "workflows")
      const nameless = Workflow.make({ name: "", version: "1", graph: wf.graph })
      assert.strictEqual(failedField(yield* buildWith({ workflows: [nameless] })), "workflows")
    }))

  it.effect("good values build, with the defaults of design.md", () =>
    Effect.gen(function*() {
      const { config } = yield* Layer.build(Baton.layer({ workflows: [wf] })).pipe(
        Effect.map((context) => Context.get(context, Instance)),
        Effect.provide(Layer.fresh(memoryStores)),
        Effect.scoped
      )
      assert.deepStrictEqual(
        [config.leaseMillis, config.renewMillis, config.sweepMillis, config.pauseRetentionMillis, config.maxConcurrentSteps],
        [30_000, 10_000, 30_000, 24 * 60 * 60 * 1000, undefined]
      )
    }))
})
