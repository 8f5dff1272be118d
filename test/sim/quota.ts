/**
 * The tenant quota in the simulation: which seeds run with one, and the
 * conservation invariant of its permits checked at every step — permits
 * held never exceed the cap, and none is held once every tree rests (a tree
 * gives its permit back at rest) nor once every holder is gone and the
 * leases ran out.
 *
 * "Held" is read from the shared `RateLimitStore` itself, through no
 * instance: every free permit is taken for 1 ms by a probe (asking for more
 * slots than the cap, so permits handed out beyond it would show) and given
 * back at once.
 */
import { Clock, Effect, Option } from "effect"
import { defaultTenant } from "../../src/stores/Ids.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import * as TenantQuota from "../../src/runtime/limits/TenantQuota.ts"
import type * as Harness from "../../src/testing/Harness.ts"

/** A seed's quota: the cap on the default tenant's running trees and what a new one over it does. */
export interface SimQuota {
  readonly cap: number
  readonly onOverQuota: "wait" | "fail"
}

/** Every third seed runs with a quota of 1 or 2; one in three of those fails new executions over it. */
export const quotaFor = (seed: number): SimQuota | undefined =>
  seed % 3 === 0 ? { cap: 1 + ((seed / 3) % 2), onOverQuota: seed % 9 === 0 ? "fail" : "wait" } : undefined

/** The runtime options of a seed's quota. */
export const batonOptions = (quota: SimQuota | undefined) =>
  quota === undefined ? {} : { tenantQuota: quota.cap, onOverQuota: quota.onOverQuota }

/** Slots asked for beyond the cap: a permit handed out beyond it shows as held. */
const beyond = 3

/** Permits of the default tenant held now (live leases), counted by the probe. */
export const permitsHeld = (cap: number) =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const now = yield* Clock.currentTimeMillis
    const key = TenantQuota.permitKey(defaultTenant)
    const probes = []
    for (let k = 0; k < cap + beyond; k++) {
      const got = yield* store.acquireSlot(key, cap + beyond, "sim-probe", 1, now)
      if (Option.isSome(got)) probes.push(got.value)
    }
    for (const p of probes) yield* store.releaseSlot(p)
    return cap + beyond - probes.length
  })

/**
 * Trees whose steps run now with their pass still holding on: a pass of a
 * live (not frozen, not dead) instance with a step body started and its
 * holder not stopped. A frozen process runs nothing; after a thaw, a pass
 * whose lease or permit lapsed meanwhile is stopped at its next renewal.
 */
const treesRunning = (h: Harness.Harness) => {
  const trees = new Set<string>()
  for (const x of h.instances) {
    if (x.state !== "alive") continue
    for (const p of x.instance.passes.active) {
      if (p.bodies.size > 0 && !(p.signal()?.aborted ?? false)) trees.add(`${p.tenantId}/${p.rootExecutionId}`)
    }
  }
  return trees.size
}

/** The invariant at one step: permits held ≤ cap, and trees running their steps ≤ cap. */
export const checkCap = (quota: SimQuota | undefined, h: Harness.Harness, when: string, violations: Array<string>) =>
  quota === undefined ? Effect.void : Effect.map(permitsHeld(quota.cap), (held) => {
    if (held > quota.cap) violations.push(`${when}: ${held} permits held, the cap is ${quota.cap}`)
    const running = treesRunning(h)
    if (running > quota.cap) violations.push(`${when}: ${running} trees run steps at once, the cap is ${quota.cap}`)
  })

/** No leak: `held` must be 0 now (every tree rests, or every holder is gone and its lease ran out). */
export const checkNone = (quota: SimQuota | undefined, when: string, violations: Array<string>) =>
  quota === undefined ? Effect.void : Effect.map(permitsHeld(quota.cap), (held) => {
    if (held !== 0) violations.push(`${when}: ${held} permits still held (a leak)`)
  })
