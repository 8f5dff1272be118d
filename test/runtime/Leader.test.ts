import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Option } from "effect"
import * as Leader from "../../src/runtime/Leader.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects } from "./fixtures.ts"

interface Tick {
  readonly at: number
  readonly who: number
  readonly kind?: "stop"
}

/** A leader's work: every second, while it may act as leader, one tick; its end is noted (in `ticks`, with kind "stop"). */
const ticking = (ticks: Array<Tick>, who: number) =>
  Effect.gen(function*() {
    const leadership = yield* Leader.Leadership
    while (true) {
      yield* leadership.check
      ticks.push({ at: yield* Clock.currentTimeMillis, who })
      yield* Effect.sleep("1 second")
    }
  }).pipe(Effect.onExit(() => Effect.map(Clock.currentTimeMillis, (at) => void stops.push({ at, who, kind: "stop" }))))

const stops: Array<Tick> = []

/** Three instances, each campaigning for the same leader. */
const fleet = (ticks: Array<Tick>) =>
  Effect.gen(function*() {
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [approval(makeSideEffects())] } })
    for (const i of [0, 1, 2]) yield* h.runIn(i, Leader.run("reports", ticking(ticks, i), { holder: `campaigner-${i}` }))
    yield* h.settle
    return h
  })

/**
 * Leadership passes forward only (never back to a stopped leader), ticks come in time order and — unless a
 * graceful handover happened at one instant, checked on its own — no two instances tick at one instant.
 */
const assertOneAtATime = (ticks: ReadonlyArray<Tick>, options?: { readonly handoverAt: number }) => {
  const order = leadersInOrder(ticks)
  assert.strictEqual(new Set(order).size, order.length, `leadership went back: ${order.join(" → ")}`)
  const byInstant = new Map<number, Set<number>>()
  for (const t of ticks) byInstant.set(t.at, (byInstant.get(t.at) ?? new Set()).add(t.who))
  for (const [at, who] of byInstant) {
    if (at !== options?.handoverAt) assert.strictEqual(who.size, 1, `two leaders at ${at}: ${[...who].join(", ")}`)
  }
  for (let i = 1; i < ticks.length; i++) assert.isTrue(ticks[i]!.at >= ticks[i - 1]!.at, "ticks in time order")
}

const leadersInOrder = (ticks: ReadonlyArray<Tick>) =>
  ticks.reduce<Array<number>>((acc, t) => (acc.at(-1) === t.who ? acc : [...acc, t.who]), [])

const firstTickOf = (ticks: ReadonlyArray<Tick>, who: number) => ticks.find((t) => t.who === who)?.at

for (const backend of backends) {
  describe(`Leader on ${backend.name}`, () => {
    it.effect("one leader at a time; a killed leader is replaced within lease + one renewal period", () =>
      Effect.gen(function*() {
        const ticks: Array<Tick> = []
        const h = yield* fleet(ticks)
        const start = yield* Clock.currentTimeMillis
        yield* h.advance("15 seconds")
        const [first] = leadersInOrder(ticks)
        assert.deepStrictEqual(leadersInOrder(ticks), [first], "one instance leads")
        assert.strictEqual(ticks.length, 16, "a tick per second from the start")
        const killedAt = yield* Clock.currentTimeMillis
        yield* h.kill(first!)
        yield* h.advance("24 seconds")
        assert.deepStrictEqual(leadersInOrder(ticks), [first], "nobody takes a live lease")
        yield* h.advance("20 seconds")
        const order = leadersInOrder(ticks)
        assert.strictEqual(order.length, 2, `one takeover: ${order.join(" → ")}`)
        const takeover = firstTickOf(ticks, order[1]!)!
        // the last renewal was read at 10 s: the lease ran out at 40 s
        assert.strictEqual(takeover - start, 40_000)
        assert.isTrue(takeover - killedAt <= 30_000 + 10_000, "within lease + one renewal period")
        assert.isTrue(ticks.filter((t) => t.who === first).every((t) => t.at <= killedAt), "a dead leader does nothing")
        assertOneAtATime(ticks)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a closed leader hands the lease back: another instance leads at the same instant", () =>
      Effect.gen(function*() {
        const ticks: Array<Tick> = []
        const h = yield* fleet(ticks)
        yield* h.advance("15 seconds")
        const [first] = leadersInOrder(ticks)
        const closedAt = yield* Clock.currentTimeMillis
        stops.length = 0
        yield* h.close(first!)
        // the program was stopped (the close finished) before another instance started leading
        assert.deepStrictEqual(stops, [{ at: closedAt, who: first, kind: "stop" }])
        const before = ticks.length
        yield* h.settle
        assert.isTrue(ticks.slice(before).every((t) => t.who !== first))
        const order = leadersInOrder(ticks)
        assert.strictEqual(order.length, 2, "taken over without moving the clock")
        assert.strictEqual(firstTickOf(ticks, order[1]!), closedAt, "at once, not a lease period later")
        yield* h.advance("30 seconds")
        assert.deepStrictEqual(leadersInOrder(ticks), order, "the new leader keeps it")
        assertOneAtATime(ticks, { handoverAt: closedAt })
        const lease = yield* LeaseStore.use((l) => l.get(Leader.leaderTenant, Leader.leaseKey("reports")))
        assert.strictEqual(Option.getOrUndefined(lease)?.epoch, 2, "fenced: the new leader has the next epoch")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a frozen leader is replaced when its lease runs out and does nothing once thawed", () =>
      Effect.gen(function*() {
        const ticks: Array<Tick> = []
        const h = yield* fleet(ticks)
        const start = yield* Clock.currentTimeMillis
        yield* h.advance("15 seconds")
        const [first] = leadersInOrder(ticks)
        const frozenAt = yield* Clock.currentTimeMillis
        yield* h.freeze(first!)
        yield* h.advance("35 seconds")
        const order = leadersInOrder(ticks)
        assert.strictEqual(order.length, 2)
        assert.strictEqual(firstTickOf(ticks, order[1]!)! - start, 40_000)
        yield* h.thaw(first!)
        yield* h.advance("30 seconds")
        assert.deepStrictEqual(leadersInOrder(ticks), order, "the thawed leader never ticks again")
        assert.isTrue(ticks.filter((t) => t.who === first).every((t) => t.at <= frozenAt))
        assertOneAtATime(ticks)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a leader whose renewals stop is interrupted at confirmedUntil, the instant the next one may lead", () =>
      Effect.gen(function*() {
        const ticks: Array<Tick> = []
        const h = yield* fleet(ticks)
        const start = yield* Clock.currentTimeMillis
        yield* h.advance("15 seconds")
        const [first] = leadersInOrder(ticks)
        yield* h.disconnect(first!)
        yield* h.advance("40 seconds")
        const order = leadersInOrder(ticks)
        assert.strictEqual(order.length, 2)
        assert.strictEqual(Math.max(...ticks.filter((t) => t.who === first).map((t) => t.at)) - start, 39_000, "its last tick before 40 s")
        assert.strictEqual(firstTickOf(ticks, order[1]!)! - start, 40_000)
        yield* h.reconnect(first!)
        yield* h.advance("30 seconds")
        assert.deepStrictEqual(leadersInOrder(ticks), order, "reconnected, it campaigns again but does not lead")
        assertOneAtATime(ticks)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a program that ends releases the lease and answers its value", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [approval(makeSideEffects())] } })
        const done = yield* h.runIn(0, Leader.run("once", Effect.map(Effect.service(Leader.Leadership), (l) => l.epoch)))
        assert.strictEqual(yield* Fiber.join(done), 1)
        const lease = yield* LeaseStore.use((l) => l.get(Leader.leaderTenant, Leader.leaseKey("once")))
        assert.isTrue(Option.isNone(lease), "released")
        const bad = yield* Effect.flip(Leader.run("", Effect.void))
        assert.strictEqual(bad._tag, "InvalidInputError")
        const badRenew = yield* Effect.flip(Leader.run("x", Effect.void, { lease: "1 second", renewEvery: "2 seconds" }))
        assert.strictEqual(badRenew._tag === "InvalidInputError" ? badRenew.field : undefined, "renewEvery")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("retention under the leader", () => {
  it.effect("one instance of the fleet holds the retention lease; closing it hands it to another at once", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [approval(makeSideEffects())] } })
      yield* h.settle
      const leaseNow = LeaseStore.use((l) => l.get(Leader.leaderTenant, Leader.leaseKey("baton/retention"))).pipe(
        Effect.map(Option.getOrUndefined)
      )
      const first = yield* leaseNow
      assert.isTrue(first?.holder.startsWith("instance-0/retention#"), `held by instance 0: ${first?.holder}`)
      yield* h.advance("45 seconds")
      assert.deepStrictEqual(yield* leaseNow, { ...first!, expiresAt: first!.expiresAt + 40_000 }, "renewed, same leader")
      yield* h.close(0)
      yield* h.settle
      const next = yield* leaseNow

      assert.isTrue(next?.holder.startsWith("instance-1/retention#") || next?.holder.startsWith("instance-2/retention#"), `taken at once: ${next?.holder}`)
      assert.strictEqual(next?.epoch, 2)
    }).pipe(Effect.provide(Layer.fresh(backends[0].stores))))
})
