/**
 * Spans for store calls, when asked for. The runtime keeps its hot store
 * calls untraced (a span per lease renewal and per record read would drown a
 * trace and cost on every step); this Layer wraps the store services it finds
 * in context so that every call is a span `baton.store <Store>.<method>`
 * (kind client) — for an investigation, or a backend you are writing.
 *
 * ```ts
 * Baton.layer({ workflows }).pipe(Layer.provide(StoreTracing.layer), Layer.provide(SqliteStores.layer({ path })))
 * ```
 *
 * The checkpoint saver (LangGraph's interface, promises) is not wrapped.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { ChildQueueStore } from "../stores/ChildQueueStore.ts"
import { ExecutionHistoryStore } from "../stores/ExecutionHistoryStore.ts"
import { LeaseStore } from "../stores/LeaseStore.ts"
import { LedgerStore } from "../stores/LedgerStore.ts"
import { PauseStore } from "../stores/PauseStore.ts"
import { RateLimitStore } from "../stores/RateLimitStore.ts"
import { RecordStore } from "../stores/RecordStore.ts"
import { RequestStore } from "../stores/RequestStore.ts"
import { TreeStore } from "../stores/TreeStore.ts"

const required = [["LeaseStore", LeaseStore], ["RecordStore", RecordStore], ["PauseStore", PauseStore], ["TreeStore", TreeStore]] as const
const optional = [
  ["LedgerStore", LedgerStore],
  ["RateLimitStore", RateLimitStore],
  ["ChildQueueStore", ChildQueueStore],
  ["ExecutionHistoryStore", ExecutionHistoryStore],
  ["RequestStore", RequestStore]
] as const

/**
 * `service` with every Effect it answers (from a method, or an Effect property such as `ping`) run in a span.
 *
 * @category constructors
 * @since 0.1.0
 */
export const traced = <S extends object>(store: string, service: S): S =>
  new Proxy(service, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      const name = `baton.store ${store}.${String(property)}`
      if (Effect.isEffect(value)) return Effect.withSpan(value, name, { kind: "client" })
      if (typeof value !== "function") return value
      return (...args: Array<unknown>) => {
        const result = (value as (...a: Array<unknown>) => unknown).apply(target, args)
        return Effect.isEffect(result) ? Effect.withSpan(result, name, { kind: "client" }) : result
      }
    }
  })

/**
 * The stores in context, their calls traced: LeaseStore, RecordStore,
 * PauseStore and TreeStore (required), and the optional stores when present.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<LeaseStore | RecordStore | PauseStore | TreeStore, never, LeaseStore | RecordStore | PauseStore | TreeStore> =
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<LeaseStore | RecordStore | PauseStore | TreeStore>()
    let out = Context.empty() as Context.Context<any>
    for (const [name, tag] of [...required, ...optional]) {
      const service = Context.getOption(context, tag as never)
      if (Option.isSome(service)) out = Context.add(out, tag as never, traced(name, service.value as object) as never)
    }
    return out as Context.Context<LeaseStore | RecordStore | PauseStore | TreeStore>
  }))
