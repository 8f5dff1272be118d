import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Exit, Layer, Option } from "effect"
import * as Baton from "../../src/runtime/Baton.ts"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { Instance } from "../../src/runtime/internal/Instance.ts"
import * as BatonConfig from "../../src/runtime/BatonConfig.ts"
import * as Runtime from "../../src/runtime/internal/Runtime.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { makeSideEffects, memoryStores, slow } from "./fixtures.ts"

const wf = slow(makeSideEffects())

const buildWith = (options: BatonConfig.BatonOptions) =>
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

  it.effect("good values build, with the documented defaults", () =>
    Effect.gen(function*() {
      // Through Baton.layer's own path: options checked into a BatonConfig, the runtime built over it.
      const { config } = yield* Runtime.make([wf]).pipe(
        Effect.map(({ instance }) => instance),
        Effect.provide([Layer.fresh(memoryStores), BatonConfig.layer({})]),
        Effect.scoped
      )
      assert.deepStrictEqual(
        [config.leaseMillis, config.renewMillis, config.sweepMillis, config.pauseRetentionMillis, config.maxConcurrentSteps],
        [30_000, 10_000, 30_000, 24 * 60 * 60 * 1000, undefined]
      )
      assert.strictEqual(config.historyRetentionMillis, 30 * 24 * 60 * 60 * 1000, "history is kept 30 days by default")
    }))
})

describe("config that cannot work is refused at build", () => {
  const reasonOf = (exit: Exit.Exit<unknown, unknown>) => {
    const error = Exit.isFailure(exit) ? Exit.findErrorOption(exit) : undefined
    return error?._tag === "Some" ? String((error.value as { message?: string }).message) : ""
  }

  it.effect("a lease below 1 s or a renewal below 100 ms", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], lease: "999 millis" })), "lease")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], lease: "1 second", renewEvery: "99 millis" })), "renewEvery")
      assert.isTrue(Exit.isSuccess(yield* buildWith({ workflows: [wf], lease: "1 second", renewEvery: "100 millis" })))
    }))

  it.effect("ceilings a store and a timer can hold", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], lease: "25 hours" })), "lease")
      assert.isTrue(Exit.isSuccess(yield* buildWith({ workflows: [wf], lease: "24 hours" })))
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], sweepInterval: 2 ** 31 })), "sweepInterval")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], waitPoll: "30 days" })), "waitPoll")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], pauseRetention: Number.MAX_SAFE_INTEGER * 2 })), "pauseRetention")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], sweepPageSize: 2 ** 53 })), "sweepPageSize")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], maxConcurrentSteps: 2 ** 53 })), "maxConcurrentSteps")
    }))

  it.effect("an unknown option is refused, naming it", () =>
    Effect.gen(function*() {
      const exit = yield* buildWith({ workflows: [wf], leaseTime: "10 seconds" } as never)
      assert.strictEqual(failedField(exit), "leaseTime")
      assert.include(reasonOf(exit), "lease")
    }))

  it.effect("NaN and Infinity are reported as what they are", () =>
    Effect.gen(function*() {
      const nan = yield* buildWith({ workflows: [wf], lease: Number.NaN })
      assert.strictEqual(failedField(nan), "lease")
      assert.include(reasonOf(nan), "NaN")
      const inf = yield* buildWith({ workflows: [wf], sweepPageSize: Number.POSITIVE_INFINITY })
      assert.strictEqual(failedField(inf), "sweepPageSize")
      assert.include(reasonOf(inf), "Infinity")
      const steps = yield* buildWith({ workflows: [wf], maxConcurrentSteps: Number.NaN })
      assert.include(reasonOf(steps), "NaN")
    }))

  it.effect("an instanceId a store cannot hold", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], instanceId: "x".repeat(161) })), "instanceId")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], instanceId: "a\u0000b" })), "instanceId")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], instanceId: "a\nb" })), "instanceId")
      assert.strictEqual(failedField(yield* buildWith({ workflows: [wf], instanceId: 7 as never })), "instanceId")
      assert.isTrue(Exit.isSuccess(yield* buildWith({ workflows: [wf], instanceId: "x".repeat(160) })))
    }))
})

describe("BatonConfig", () => {
  const fromEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(env))
  const buildFromConfig = (env: Record<string, string>) =>
    Layer.build(Baton.layerConfig({ workflows: [wf] })).pipe(
      Effect.provide([Layer.fresh(memoryStores), fromEnv(env)]),
      Effect.scoped,
      Effect.exit
    )

  it.effect("layerConfig reads BATON_* from any ConfigProvider", () =>
    Effect.gen(function*() {
      const config = yield* Effect.service(BatonConfig.BatonConfig).pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(fromEnv({
          BATON_LEASE: "12 seconds",
          BATON_RENEW_EVERY: "3000",
          BATON_WAIT_POLL: "2 seconds",
          BATON_SWEEP_INTERVAL: "1 minute",
          BATON_PAUSE_RETENTION: "2 hours",
          BATON_HISTORY_RETENTION: "7 days",
          BATON_SWEEP_PAGE_SIZE: "50",
          BATON_MAX_CONCURRENT_STEPS: "4",
          BATON_MAX_RECOVERIES_PER_LOOK: "20",
          BATON_MAX_RECOVERY_ATTEMPTS: "3",
          BATON_RECOVERY_BACKOFF: "2 seconds",
          BATON_RECOVERY_BACKOFF_MAX: "1 minute",
          BATON_UNDO_ATTEMPTS: "3",
          BATON_UNDO_BACKOFF: "500",
          BATON_UNDO_BACKOFF_MAX: "10 seconds",
          BATON_INSTANCE_ID: "from-env"
        }))
      )
      assert.deepStrictEqual(config, {
        instanceId: "from-env",
        leaseMillis: 12_000,
        renewMillis: 3_000,
        waitPollMillis: 2_000,
        sweepMillis: 60_000,
        pauseRetentionMillis: 2 * 60 * 60 * 1000,
        historyRetentionMillis: 7 * 24 * 60 * 60 * 1000,
        requestRetentionMillis: 24 * 60 * 60 * 1000,
        sweepPageSize: 50,
        maxConcurrentSteps: 4,
        maxRecoveriesPerLook: 20,
        maxRecoveryAttempts: 3,
        recoveryBackoffMillis: 2_000,
        recoveryBackoffMaxMillis: 60_000,
        undoAttempts: 3,
        undoBackoffMillis: 500,
        undoBackoffMaxMillis: 10_000
      })
      const none = yield* Effect.service(BatonConfig.BatonConfig).pipe(Effect.provide(BatonConfig.layerConfig()), Effect.provide(fromEnv({})))
      assert.deepStrictEqual(none, BatonConfig.defaults)
    }))

  it.effect("a bad value from config fails with BatonConfigError naming the field and the key", () =>
    Effect.gen(function*() {
      const lease = yield* buildFromConfig({ BATON_LEASE: "forever" })
      assert.strictEqual(failedField(lease), "lease")
      const error = Exit.isFailure(lease) ? Exit.findErrorOption(lease) : undefined
      assert.include(error?._tag === "Some" ? (error.value as Error).message : "", "BATON_LEASE")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_MAX_CONCURRENT_STEPS: "many" })), "maxConcurrentSteps")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_SWEEP_PAGE_SIZE: "1.5" })), "sweepPageSize")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_RENEW_EVERY: "40 seconds" })), "renewEvery")
      assert.isTrue(Exit.isSuccess(yield* buildFromConfig({ BATON_LEASE: "5 seconds" })))
    }))

  it.effect("recovery limits that cannot work are refused naming the field", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_MAX_RECOVERY_ATTEMPTS: "0" })), "maxRecoveryAttempts")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_MAX_RECOVERY_ATTEMPTS: "2.5" })), "maxRecoveryAttempts")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_RECOVERY_BACKOFF: "never" })), "recoveryBackoff")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_RECOVERY_BACKOFF: "10 seconds", BATON_RECOVERY_BACKOFF_MAX: "5 seconds" })), "recoveryBackoffMax")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_RECOVERY_BACKOFF_MAX: "100 days" })), "recoveryBackoffMax")
      const bad = yield* Layer.build(BatonConfig.layer({ maxRecoveryAttempts: Number.NaN })).pipe(Effect.scoped, Effect.exit)
      assert.strictEqual(failedField(bad), "maxRecoveryAttempts")
      assert.isTrue(Exit.isSuccess(yield* buildFromConfig({ BATON_MAX_RECOVERY_ATTEMPTS: "1", BATON_RECOVERY_BACKOFF: "5 seconds", BATON_RECOVERY_BACKOFF_MAX: "5 seconds" })))
    }))

  it.effect("undo retry limits that cannot work are refused naming the field", () =>
    Effect.gen(function*() {
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_ATTEMPTS: "0" })), "undoAttempts")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_ATTEMPTS: "101" })), "undoAttempts")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_ATTEMPTS: "1.5" })), "undoAttempts")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_BACKOFF: "soon" })), "undoBackoff")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_BACKOFF: "10 seconds", BATON_UNDO_BACKOFF_MAX: "2 seconds" })), "undoBackoffMax")
      assert.strictEqual(failedField(yield* buildFromConfig({ BATON_UNDO_BACKOFF_MAX: "2 hours" })), "undoBackoffMax")
      const bad = yield* Layer.build(BatonConfig.layer({ undoAttempts: -1 })).pipe(Effect.scoped, Effect.exit)
      assert.strictEqual(failedField(bad), "undoAttempts")
      assert.isTrue(Exit.isSuccess(yield* buildFromConfig({ BATON_UNDO_ATTEMPTS: "1", BATON_UNDO_BACKOFF: "1 second", BATON_UNDO_BACKOFF_MAX: "1 second" })))
    }))

  it.effect("Baton.layerWith takes a provided BatonConfig; BatonConfig.layer checks its options", () =>
    Effect.gen(function*() {
      const built = yield* Layer.build(Baton.layerWith({ workflows: [wf] })).pipe(
        Effect.provide([Layer.fresh(memoryStores), BatonConfig.layer({ instanceId: "given" })]),
        Effect.scoped
      )
      assert.strictEqual(Context.get(built, Baton.Baton).instanceId, "given")
      const bad = yield* Layer.build(BatonConfig.layer({ lease: "10 seconds", renewEvery: "20 seconds" })).pipe(Effect.scoped, Effect.exit)
      assert.strictEqual(failedField(bad), "renewEvery")
      const typo = yield* Layer.build(BatonConfig.layer({ workflows: [] } as never)).pipe(Effect.scoped, Effect.exit)
      assert.strictEqual(failedField(typo), "workflows")
    }))
})

describe("the Baton Layer's public type", () => {
  it.effect("gives Baton only: the instance's internal state stays inside", () =>
    Effect.gen(function*() {
      const layer: Layer.Layer<Baton.Baton, BatonConfigError, Baton.BatonStores> = Baton.layer({ workflows: [wf] })
      const built = yield* Layer.build(layer).pipe(Effect.provide(Layer.fresh(memoryStores)), Effect.scoped)
      assert.isTrue(Option.isSome(Context.getOption(built, Baton.Baton)))
      assert.isTrue(Option.isNone(Context.getOption(built, Instance)), "Instance is not in the Layer's output")
    }))
})
