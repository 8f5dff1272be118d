/**
 * The memory bundle and its single-store Layers, named like every backend's:
 * `layer`, `layerOnState`, and `layerLeaseStore`, `layerRecordStore`, …
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"

describe("MemoryStores", () => {
  it.effect("every store builds alone on its own rows and answers ping", () =>
    Effect.gen(function*() {
      const ping = <I, S extends { readonly ping: Effect.Effect<void, unknown> }>(layer: Layer.Layer<I, never, never>, key: Context.Key<I, S>) =>
        Effect.flatMap(Layer.build(layer), (ctx) => Context.get(ctx, key).ping)
      yield* ping(MemoryStores.layerLeaseStore, LeaseStore)
      yield* ping(MemoryStores.layerRecordStore.pipe(Layer.provide(Ids.layer)), RecordStore)
      yield* ping(MemoryStores.layerPauseStore, PauseStore)
      yield* ping(MemoryStores.layerTreeStore, TreeStore)
      yield* ping(MemoryStores.layerCheckpointStore, CheckpointStore)
      yield* ping(MemoryStores.layerLedgerStore, LedgerStore)
      yield* ping(MemoryStores.layerRateLimitStore, RateLimitStore)
      yield* ping(MemoryStores.layerChildQueueStore, ChildQueueStore)
      yield* ping(MemoryStores.layerExecutionHistoryStore, ExecutionHistoryStore)
      yield* ping(MemoryStores.layerRequestStore, RequestStore)
    }).pipe(Effect.scoped))

  it.effect("two builds of layerOnState on one MemoryState share rows, as instances share a database", () =>
    Effect.gen(function*() {
      const shared = yield* Layer.build(Layer.merge(MemoryState.layer, Ids.layer))
      const a = Context.get(yield* Layer.build(Layer.fresh(MemoryStores.layerOnState).pipe(Layer.provide(Layer.succeedContext(shared)))), LeaseStore)
      const b = Context.get(yield* Layer.build(Layer.fresh(MemoryStores.layerOnState).pipe(Layer.provide(Layer.succeedContext(shared)))), LeaseStore)
      assert.isTrue(Option.isSome(yield* a.acquire("t", "root", "a", 30_000, 0)))
      assert.isTrue(Option.isNone(yield* b.acquire("t", "root", "b", 30_000, 0)), "b sees a's lease")
    }).pipe(Effect.scoped))
})
