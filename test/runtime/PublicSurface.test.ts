/**
 * The main entry as a user reads it (namespaces only): each module's
 * constructors and Layers are the module's own functions, never statics of
 * its service class, so `LeaseStore.make(backend)` and `Ids.layer` work as
 * the docs write them, and a contract's `make` guards a backend of one's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  Baton,
  ChildQueueStore,
  ConcurrencyKeyStore,
  DebounceStore,
  Diagnostics,
  EventStore,
  ExecutionHistoryStore,
  Ids,
  LeaseStore,
  LedgerStore,
  Observer,
  PauseStore,
  RateLimitStore,
  RecordStore,
  RequestStore,
  Schedules,
  ScheduleStore,
  TimerStore,
  TreeStore
} from "../../src/index.ts"
import { MemoryCheckpointStore, MemoryLeaseStore, MemoryState } from "../../layers/memory/index.ts"

const contracts = {
  ChildQueueStore,
  ConcurrencyKeyStore,
  DebounceStore,
  EventStore,
  ExecutionHistoryStore,
  LeaseStore,
  LedgerStore,
  PauseStore,
  RateLimitStore,
  RecordStore,
  RequestStore,
  ScheduleStore,
  TimerStore,
  TreeStore
} as const

describe("the main entry's namespaces", () => {
  it("every contract's make is its module's function; its service class carries no static of its own", () => {
    for (const [name, module] of Object.entries(contracts)) {
      assert.strictEqual(typeof module.make, "function", `${name}.make`)
      const service = (module as unknown as Record<string, object>)[name]!
      assert.isFalse(Object.hasOwn(service, "make"), `${name}.${name}.make is a static`)
    }
  })

  it("the Layers and helpers that were statics are module members: Ids.layer, Ids.layerSequential, Schedules.layer, MemoryState.layer, LedgerStore.dayOf", () => {
    for (const layer of [Ids.layer, Ids.layerSequential, Schedules.layer, MemoryState.layer]) assert.isTrue(Layer.isLayer(layer))
    assert.strictEqual(LedgerStore.dayOf(0), "1970-01-01")
    assert.isFalse(Object.hasOwn(Ids.IdGenerator, "layer"))
    assert.isFalse(Object.hasOwn(Baton.Baton, "layer"))
    assert.strictEqual(typeof Observer.make, "function")
  })

  it("baton/memory keeps its rows to itself: MemoryState is the service and its Layer, and no store exports a row helper", () => {
    assert.deepStrictEqual(Object.keys(MemoryState).sort(), ["MemoryState", "layer"])
    assert.deepStrictEqual(Object.keys(MemoryLeaseStore).sort(), ["layer", "make"])
    assert.deepStrictEqual(Object.keys(MemoryCheckpointStore).sort(), ["layer", "make", "makeRows"])
    assert.isTrue(Effect.isEffect(MemoryCheckpointStore.makeRows), "makeRows reads the rows of the MemoryState in context")
  })

  it("Baton.describe and Baton.check are Diagnostics' own", () => {
    assert.strictEqual(Baton.describe, Diagnostics.describe)
    assert.strictEqual(Baton.check, Diagnostics.check)
  })

  it.effect("LeaseStore.make guards a backend of one's own: a NUL id fails with InvalidInputError naming it, and the backend is never called", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const store = LeaseStore.make({
        acquire: () => Effect.sync(() => (calls.push("acquire"), Option.none())),
        renew: () => Effect.sync(() => (calls.push("renew"), false)),
        release: () => Effect.sync(() => (calls.push("release"), false)),
        get: () => Effect.sync(() => (calls.push("get"), Option.none())),
        ping: Effect.void
      })
      const error = yield* Effect.flip(store.acquire("t", "root\u0000", "holder", 30_000, 0))
      assert.strictEqual(error._tag, "InvalidInputError")
      assert.strictEqual((error as { field?: string }).field, "rootExecutionId")
      assert.deepStrictEqual(calls, [])
    }))
})
