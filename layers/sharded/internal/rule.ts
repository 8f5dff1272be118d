/**
 * The options of `ShardedStores.layer`, checked once at build: at least one
 * shard, names non-empty and distinct, a rule that is a function or a table
 * whose every shard (and default) is one of the shards. A refusal is a
 * `BatonConfigError` naming the field.
 */
import { Effect } from "effect"
import { BatonConfigError } from "../../../src/stores/Errors.ts"
import { refuseUnknown, show } from "../../../src/stores/internal/options.ts"

/** The rule as the user gives it (see `ShardedStores.Route`). */
export type RouteInput =
  | ((tenantId: string) => string)
  | { readonly tenants?: Readonly<Record<string, string>> | undefined; readonly default: string }

/** Where a tenant goes: a shard's index, or why the rule gave none. */
export type Routed = { readonly _tag: "Shard"; readonly index: number } | { readonly _tag: "NoShard"; readonly reason: string }

/** The checked rule: tenant → shard index. */
export interface Rule {
  readonly names: ReadonlyArray<string>
  readonly route: (tenantId: string) => Routed
}

const fail = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

/** Checks the shard names and the rule; answers the rule over shard indexes. */
export const check = (
  options: unknown,
  shards: unknown,
  route: unknown
): Effect.Effect<Rule, BatonConfigError> =>
  Effect.gen(function*() {
    yield* refuseUnknown(options, ["shards", "route", "retryAfter"])
    if (!Array.isArray(shards)) {
      return yield* fail("shards", `is ${show(shards)}: it must be an array of { name, layer }, one per store bundle`)
    }
    if (shards.length === 0) return yield* fail("shards", "is empty: give at least one { name, layer } (one per database)")
    const names: Array<string> = []
    for (const [i, shard] of shards.entries()) {
      if (typeof shard !== "object" || shard === null) return yield* fail(`shards[${i}]`, `is ${show(shard)}: it must be { name, layer }`)
      yield* refuseUnknown(shard, ["name", "layer"], `shards[${i}].`)
      const name: unknown = (shard as { name?: unknown }).name
      if (typeof name !== "string" || name.length === 0) {
        return yield* fail(`shards[${i}].name`, `is ${show(name)}: it must be a non-empty text naming the shard`)
      }
      const earlier = names.indexOf(name)
      if (earlier >= 0) return yield* fail(`shards[${i}].name`, `is "${name}", the name of shards[${earlier}] too: give every shard its own name`)
      const layer: unknown = (shard as { layer?: unknown }).layer
      if (typeof layer !== "object" || layer === null) {
        return yield* fail(`shards[${i}].layer`, `is ${show(layer)}: it must be a store bundle Layer (e.g. PgStores.layer({ url }))`)
      }
      names.push(name)
    }
    const known = `one of ${names.map((n) => `"${n}"`).join(", ")}`
    const indexOf = (name: unknown) => (typeof name === "string" ? names.indexOf(name) : -1)
    if (typeof route === "function") {
      const rule = route as (tenantId: string) => unknown
      return {
        names,
        route: (tenantId) => {
          let answer: unknown
          try {
            answer = rule(tenantId)
          } catch (e) {
            return { _tag: "NoShard", reason: `the route function threw for tenant "${tenantId}" (${e instanceof Error ? e.message : show(e)}): make it answer ${known} for every tenant` }
          }
          const index = indexOf(answer)
          return index >= 0
            ? { _tag: "Shard", index }
            : { _tag: "NoShard", reason: `the route function answered ${show(answer)} for tenant "${tenantId}", which is no shard: make it answer ${known}` }
        }
      }
    }
    if (typeof route !== "object" || route === null) {
      return yield* fail("route", `is ${show(route)}: it must be a function (tenantId) => shard name, or { tenants: { tenant: shard }, default: shard }`)
    }
    yield* refuseUnknown(route, ["tenants", "default"], "route.")
    const table = route as { tenants?: unknown; default?: unknown }
    const fallback = indexOf(table.default)
    if (fallback < 0) return yield* fail("route.default", `is ${show(table.default)}, which is no shard: it must be ${known}`)
    const tenants = new Map<string, number>()
    if (table.tenants !== undefined) {
      if (typeof table.tenants !== "object" || table.tenants === null || Array.isArray(table.tenants)) {
        return yield* fail("route.tenants", `is ${show(table.tenants)}: it must be an object { tenantId: shard name }`)
      }
      for (const [tenant, shard] of Object.entries(table.tenants)) {
        const index = indexOf(shard)
        if (index < 0) return yield* fail(`route.tenants.${tenant}`, `is ${show(shard)}, which is no shard: it must be ${known}`)
        tenants.set(tenant, index)
      }
    }
    return { names, route: (tenantId) => ({ _tag: "Shard", index: tenants.get(tenantId) ?? fallback }) }
  })
