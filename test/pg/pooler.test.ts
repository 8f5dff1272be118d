/**
 * Postgres through pgbouncer (transaction mode on 127.0.0.1:6432, session
 * mode on 127.0.0.1:6433; `.ci/run` starts both): what a pooler refuses is
 * refused truthfully at build, naming the option to change, and what it
 * allows works — the liveness lock in session mode, the wake-ups falling
 * back to polling in transaction mode.
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger } from "effect"
import { PgClient, PgEventWakeups, PgWakeups } from "../../layers/pg/index.ts"
import { EventWakeups, type EventWakeupsShape, makeHub as makeEventHub } from "../../src/stores/EventWakeups.ts"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../src/stores/LeaseWakeups.ts"
import { bouncerUrls, requireBouncers } from "./bouncers.ts"
import { randomName } from "./db.ts"

beforeAll(requireBouncers, 20_000)

describe("a schema through pgbouncer", () => {
  for (const mode of ["transaction", "session"] as const) {
    it.effect(`${mode} mode refuses the search_path startup parameter: a BatonConfigError on schema saying what to do, not a retryable connection error`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(Layer.build(PgClient.layer({ url: bouncerUrls[mode], schema: randomName("baton_t_pgb") })).pipe(Effect.scoped))
        assert.strictEqual(error._tag, "BatonConfigError", error.message)
        assert.deepInclude(error, { field: "schema" })
        assert.match(error.message, /search_path.*tablePrefix/)
      }))
  }
})

/** One "process" through a pooler: its own pool and hub, the Pg wake-ups wrapping the hub, its log lines kept. */
const processThrough = (target: string, hub: LeaseWakeupsShape, logs: Array<string>) =>
  Effect.map(
    Layer.build(
      PgWakeups.layer({ tablePrefix: wakePrefix }).pipe(
        Layer.provideMerge(PgClient.layer({ url: target, maxConnections: 2 })),
        Layer.provide(Layer.succeed(LeaseWakeups, hub)),
        Layer.provide(Logger.layer([Logger.make(({ message }) => logs.push(String(message)))]))
      )
    ),
    (context) => Context.get(context, LeaseWakeups)
  )
const wakePrefix = randomName("bt_wake")

describe("wake-ups through pgbouncer", () => {
  it.live("session mode: a release on one process wakes the other's waiter over NOTIFY, as direct", () =>
    Effect.gen(function*() {
      const [hubA, hubB] = [makeHub(), makeHub()]
      const logs: Array<string> = []
      const a = yield* processThrough(bouncerUrls.session, hubA, logs)
      yield* processThrough(bouncerUrls.session, hubB, logs)
      const waiter = yield* Effect.forkChild(hubB.next("t", "r1"), { startImmediately: true })
      a.released("t", "r1")
      yield* Fiber.join(waiter).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error("B not woken within 5 s")) }))
      assert.deepStrictEqual(logs.filter((l) => /LISTEN|polling/.test(l)), [])
    }).pipe(Effect.scoped))

  it.live("transaction mode: no LISTEN is held (it could not be); the build says once that other instances' releases are seen at polling", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const a = yield* processThrough(bouncerUrls.transaction, makeHub(), logs)
      // Its own waiters are still woken at once, in process.
      const hub = makeHub()
      const own = yield* processThrough(bouncerUrls.transaction, hub, logs)
      const waiter = yield* Effect.forkChild(hub.next("t", "r2"), { startImmediately: true })
      own.released("t", "r2")
      yield* Fiber.join(waiter).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error("own waiter not woken")) }))
      a.released("t", "r3")
      const said = logs.filter((l) => /transaction mode/.test(l))
      assert.strictEqual(said.length, 2, `once per process: ${logs.join(" | ")}`)
      assert.match(said[0]!, /polling/)
    }).pipe(Effect.scoped))
})

describe("event wake-ups through pgbouncer", () => {
  const eventsThrough = (target: string, hub: EventWakeupsShape, logs: Array<string>) =>
    Effect.map(
      Layer.build(
        PgEventWakeups.layer({ tablePrefix: wakePrefix }).pipe(
          Layer.provideMerge(PgClient.layer({ url: target, maxConnections: 2 })),
          Layer.provide(Layer.succeed(EventWakeups, hub)),
          Layer.provide(Logger.layer([Logger.make(({ message }) => logs.push(String(message)))]))
        )
      ),
      (context) => Context.get(context, EventWakeups)
    )

  it.live("session mode: an append on one process wakes the other's reader over NOTIFY", () =>
    Effect.gen(function*() {
      const [hubA, hubB] = [makeEventHub(), makeEventHub()]
      const logs: Array<string> = []
      const a = yield* eventsThrough(bouncerUrls.session, hubA, logs)
      yield* eventsThrough(bouncerUrls.session, hubB, logs)
      const reader = yield* Effect.forkChild(hubB.next("t", "thread-1"), { startImmediately: true })
      a.appended("t", "thread-1")
      yield* Fiber.join(reader).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error("B's reader not woken within 5 s")) }))
      assert.deepStrictEqual(logs.filter((l) => /LISTEN|polling/.test(l)), [])
    }).pipe(Effect.scoped))

  it.live("transaction mode: no LISTEN is held; the build says once that readers are woken by other instances only at their polling", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const hub = makeEventHub()
      const own = yield* eventsThrough(bouncerUrls.transaction, hub, logs)
      const reader = yield* Effect.forkChild(hub.next("t", "thread-2"), { startImmediately: true })
      own.appended("t", "thread-2")
      yield* Fiber.join(reader).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error("own reader not woken")) }))
      const said = logs.filter((l) => /transaction mode/.test(l))
      assert.strictEqual(said.length, 1, logs.join(" | "))
      assert.match(said[0]!, /event wake-ups/)
      assert.match(said[0]!, /polling/)
    }).pipe(Effect.scoped))
})
