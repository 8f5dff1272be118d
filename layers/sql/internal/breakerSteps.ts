/**
 * The state transitions of effect's `CircuitBreakerStore`, as pure functions
 * of (entry, options, now) so a SQL store can run them under a row lock. They
 * follow effect 4.1's `CircuitBreaker.layerStoreMemory`, with one change taken
 * from its Redis store: the HalfOpen probe holds a lease (`leaseUntil`),
 * renewed while it runs, instead of a flag — a probe whose process died frees
 * the circuit when its lease lapses instead of blocking it for good.
 * Generations grow per key and never repeat, even across an expired entry.
 */
import type { TripPolicy } from "effect/persistence/CircuitBreaker"
import type { Step } from "./lockedState.ts"

export interface Entry {
  readonly state: "Closed" | "Open" | "HalfOpen"
  readonly generation: number
  readonly lastActivity: number
  readonly streak: number
  /** The Rate policy's window of outcomes, oldest first: "1" a failure, "0" a success. */
  readonly ring: string
  readonly ringFailures: number
  readonly openUntil: number
  readonly consecutiveOpenings: number
  readonly lastOpenFor: number
  readonly resetAt: number
  readonly leaseUntil: number
}

export interface Timing {
  readonly now: number
  readonly leaseMillis: number
  readonly idleMillis: number
}

export const probing = (e: Entry, now: number): boolean => e.state === "HalfOpen" && e.leaseUntil > now

const expired = (e: Entry, t: Timing): boolean => {
  switch (e.state) {
    case "Closed":
      return t.now - e.lastActivity >= t.idleMillis
    case "Open":
      return t.now - Math.max(e.lastActivity, e.openUntil) >= t.idleMillis
    case "HalfOpen":
      return !probing(e, t.now) && t.now - e.lastActivity >= t.idleMillis
  }
}

/** The live entry, or undefined when there is none or it expired. */
export const live = (e: Entry | undefined, t: Timing): Entry | undefined => e !== undefined && !expired(e, t) ? e : undefined

const cleared = { streak: 0, ring: "", ringFailures: 0 } as const

const fresh = (generation: number, now: number): Entry => ({
  state: "Closed",
  generation,
  lastActivity: now,
  ...cleared,
  openUntil: 0,
  consecutiveOpenings: 0,
  lastOpenFor: 0,
  resetAt: 0,
  leaseUntil: 0
})

export type Admitted =
  | { readonly _tag: "Ok"; readonly generation: number; readonly probe: boolean; readonly consecutiveOpenings: number; readonly moved: boolean }
  | { readonly _tag: "Open"; readonly remainingMillis: number }
  | { readonly _tag: "HalfOpen" }

export const admit = (stored: Entry | undefined, t: Timing): Step<Entry, Admitted> => {
  let e = live(stored, t) ?? fresh((stored?.generation ?? 0) + 1, t.now)
  let moved = false
  switch (e.state) {
    case "Closed":
      if (e.consecutiveOpenings > 0 && t.now >= e.resetAt) e = { ...e, consecutiveOpenings: 0 }
      break
    case "Open":
      if (t.now < e.openUntil) return { result: { _tag: "Open", remainingMillis: e.openUntil - t.now } }
      e = { ...e, state: "HalfOpen" }
      moved = true
      break
    case "HalfOpen":
      if (probing(e, t.now)) return { result: { _tag: "HalfOpen" } }
      break
  }
  e = e.state === "HalfOpen"
    ? { ...e, lastActivity: t.now, generation: e.generation + 1, leaseUntil: t.now + t.leaseMillis }
    : { ...e, lastActivity: t.now }
  return {
    next: e,
    result: { _tag: "Ok", generation: e.generation, probe: e.state === "HalfOpen", consecutiveOpenings: e.consecutiveOpenings, moved }
  }
}

export interface RecordOptions {
  readonly generation: number
  readonly outcome: "Success" | "Failure" | "Ignored"
  readonly tripPolicy: TripPolicy
  readonly openForMillis: number
}

export type Recorded =
  | { readonly _tag: "None" }
  | { readonly _tag: "Opened"; readonly from: "Closed" | "HalfOpen"; readonly consecutiveOpenings: number }
  | { readonly _tag: "Closed" }

const none: Recorded = { _tag: "None" }

const open = (e: Entry, from: "Closed" | "HalfOpen", o: RecordOptions, now: number): Step<Entry, Recorded> => {
  const consecutiveOpenings = e.consecutiveOpenings + 1
  return {
    next: {
      ...e,
      ...cleared,
      state: "Open",
      generation: e.generation + 1,
      lastOpenFor: o.openForMillis,
      openUntil: now + o.openForMillis,
      consecutiveOpenings,
      leaseUntil: 0
    },
    result: { _tag: "Opened", from, consecutiveOpenings }
  }
}

const trips = (e: Entry, policy: TripPolicy): boolean =>
  policy._tag === "Consecutive"
    ? e.streak >= policy.failures
    : e.ring.length >= policy.minimumCalls && e.ringFailures > 0 && e.ringFailures / e.ring.length >= policy.threshold

const recordClosed = (e: Entry, o: RecordOptions, now: number): Step<Entry, Recorded> => {
  const failed = o.outcome === "Failure"
  let next: Entry = { ...e, streak: failed ? e.streak + 1 : 0 }
  if (o.tripPolicy._tag === "Rate") {
    let ring = next.ring + (failed ? "1" : "0")
    let ringFailures = next.ringFailures + (failed ? 1 : 0)
    while (ring.length > o.tripPolicy.size) {
      if (ring[0] === "1") ringFailures--
      ring = ring.slice(1)
    }
    next = { ...next, ring, ringFailures }
  }
  return trips(next, o.tripPolicy) ? open(next, "Closed", o, now) : { next, result: none }
}

export const record = (stored: Entry | undefined, o: RecordOptions, t: Timing): Step<Entry, Recorded> => {
  const found = live(stored, t)
  if (found === undefined || found.generation !== o.generation) return { result: none }
  const e: Entry = { ...found, lastActivity: t.now }
  if (e.state === "HalfOpen") {
    switch (o.outcome) {
      case "Ignored":
        // a new generation fences a renewal already on its way, so the freed probe slot stays free
        return { next: { ...e, generation: e.generation + 1, leaseUntil: 0 }, result: none }
      case "Failure":
        return open(e, "HalfOpen", o, t.now)
      case "Success":
        return {
          next: { ...e, ...cleared, state: "Closed", generation: e.generation + 1, resetAt: t.now + e.lastOpenFor, leaseUntil: 0 },
          result: { _tag: "Closed" }
        }
    }
  }
  if (e.state !== "Closed" || o.outcome === "Ignored") return { next: e, result: none }
  return recordClosed(e, o, t.now)
}

/** Extends the probe's lease while `generation` still holds it; false once it is gone. */
export const renew = (stored: Entry | undefined, generation: number, t: Timing): Step<Entry, boolean> =>
  stored !== undefined && stored.state === "HalfOpen" && stored.generation === generation
    ? { next: { ...stored, leaseUntil: t.now + t.leaseMillis }, result: true }
    : { result: false }
