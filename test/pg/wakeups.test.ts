/**
 * LISTEN/NOTIFY wake-ups between instances. Each "process" here has a hub of
 * its own (as two machines would), so only a notification through Postgres
 * can wake the other's waiters. Waits are bounded by a timeout that fails the
 * test; nothing sleeps.
 */
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Queue, Scope } from "effect"
import { PgClient, PgMigrations, PgWakeups } from "../../layers/pg/index.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import * as LeaseHolder from "../../src/runtime/internal/lease/LeaseHolder.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../src/stores/LeaseWakeups.ts"
import { randomName, testSchema, url } from "./db.ts"

const schema = testSchema("wakeups")
const within = "5 seconds"

/** One "process": its own pool, its own hub, and the Pg wake-ups wrapping that hub. */
const processLayer = (hub: LeaseWakeupsShape, options: PgWakeups.PgWakeupsOptions = {}) =>
  Layer.merge(PgWakeups.layer({ schema, ...options }), Layer.effect(LeaseStore, Effect.andThen(PgMigrations.migrate({ schema }), SqlLeaseStore.make()))).pipe(
    Layer.provideMerge(PgClient.layer({ url, schema, maxConnections: 2 })),
    Layer.provide(Layer.succeed(LeaseWakeups, hub))
  )

const buildProcess = (hub: LeaseWakeupsShape, options?: PgWakeups.PgWakeupsOptions) =>
  Effect.map(Layer.build(processLayer(hub, options)), (context) => ({ context, wakeups: Context.get(context, LeaseWakeups) }))

/** A fiber waiting on `hub` for a release of (tenant, root). */
const waiting = (hub: LeaseWakeupsShape, tenant: string, root: string) =>
  Effect.forkChild(hub.next(tenant, root), { startImmediately: true })

const awaitWoken = <A, E>(fiber: Fiber.Fiber<A, E>, what: string) =>
  Fiber.join(fiber).pipe(
    Effect.timeoutOrElse({ duration: within, orElse: () => Effect.die(new Error(`${what}: not woken within ${within}`)) })
  )

describe("PgWakeups", () => {
  it.live("a reconnect delay that cannot work fails the build with a BatonConfigError naming it (not a defect)", () =>
    Effect.gen(function*() {
      for (const reconnectDelay of [NaN, -1, "soon" as any]) {
        const error = yield* Effect.flip(Effect.scoped(buildProcess(makeHub(), { reconnectDelay })))
        assert.strictEqual(error._tag, "BatonConfigError")
        assert.strictEqual((error as any).field, "reconnectDelay")
      }
    }))

  it.live("a NOTIFY sent on one pool reaches a LISTEN on another connection", () =>
    Effect.gen(function*() {
      const a = yield* Layer.build(PgClient.layer({ url, maxConnections: 1 }))
      const b = yield* Layer.build(PgClient.layer({ url, maxConnections: 1 }))
      const channel = PgWakeups.channel({ schema })
      const notifications = yield* Context.get(b, EffectPgClient.PgClient).listen(channel)
      yield* Context.get(a, EffectPgClient.PgClient).notify(channel, "hello")
      const received = yield* Queue.take(notifications).pipe(
        Effect.timeoutOrElse({ duration: within, orElse: () => Effect.die(new Error("no notification")) })
      )
      assert.strictEqual(received.payload, "hello")
    }).pipe(Effect.scoped))

  it.live("a release on one process wakes the other process's waiter of that tree; its own notification is skipped", () =>
    Effect.gen(function*() {
      const hubA = makeHub()
      const hubB = makeHub()
      const a = yield* buildProcess(hubA)
      const b = yield* buildProcess(hubB)
      const tenant = randomName("tenant")
      const [r1, r2] = [randomName("root"), randomName("root")]

      const localA = yield* waiting(hubA, tenant, r1)
      const remoteB = yield* waiting(hubB, tenant, r1)
      a.wakeups.released(tenant, r1)
      yield* awaitWoken(localA, "A's own waiter (in process)")
      yield* awaitWoken(remoteB, "B's waiter (over NOTIFY)")

      // A's own notification of r1 comes back to A's listener before B's of r2: it must not wake A again.
      const againA = yield* waiting(hubA, tenant, r1)
      const otherA = yield* waiting(hubA, tenant, r2)
      b.wakeups.released(tenant, r2)
      yield* awaitWoken(otherA, "A's waiter of r2 (over NOTIFY)")
      assert.isUndefined(againA.pollUnsafe(), "A skipped the notification it sent itself")
      yield* Fiber.interrupt(againA)
    }).pipe(Effect.scoped))

  it.live("a release of a tree that ended reaches the other process as ended: its waiter of that tree is woken, its sweep is not", () =>
    Effect.gen(function*() {
      const inner = makeHub()
      const told: Array<{ readonly root: string; readonly ended: boolean }> = []
      const hubB: LeaseWakeupsShape = {
        released: (tenantId, root, options) => {
          told.push({ root, ended: options?.ended === true })
          inner.released(tenantId, root, options)
        },
        next: inner.next
      }
      const a = yield* buildProcess(makeHub())
      yield* buildProcess(hubB)
      const tenant = randomName("tenant")
      const [ended, running] = [randomName("root"), randomName("root")]
      const tree = yield* waiting(hubB, tenant, ended)
      a.wakeups.released(tenant, ended, { ended: true })
      yield* awaitWoken(tree, "B's waiter of the ended tree (over NOTIFY)")
      // A sweep as the runtime's waits (not short of step slots): it skips the releases of trees that ended.
      const sweep = yield* Effect.forkChild(hubB.next(undefined, undefined, { skipEnded: () => true }), { startImmediately: true })
      a.wakeups.released(tenant, running)
      yield* awaitWoken(sweep, "B's sweep, woken by the plain release")
      assert.deepStrictEqual(told, [{ root: ended, ended: true }, { root: running, ended: false }])
    }).pipe(Effect.scoped))

  it.live("the lease holder's release (the runtime's own hook) wakes a waiter on another process", () =>
    Effect.gen(function*() {
      const hubB = makeHub()
      const a = yield* buildProcess(makeHub())
      yield* buildProcess(hubB)
      const tenant = randomName("tenant")
      const root = randomName("root")
      const scope = yield* Scope.make()
      const holder = yield* LeaseHolder.acquire({ tenantId: tenant, rootExecutionId: root, holder: "instance-a#1", leaseMillis: 30_000, renewMillis: 10_000 }).pipe(
        Scope.provide(scope),
        Effect.provide(a.context)
      )
      assert.isTrue(Option.isSome(holder))
      const remote = yield* waiting(hubB, tenant, root)
      yield* Scope.close(scope, Exit.void) // the pass ends: the holder releases the lease and tells the hub
      yield* awaitWoken(remote, "B's waiter after A's holder released")
      const lease = yield* LeaseStore.use((s) => s.get(tenant, root)).pipe(Effect.provide(a.context))
      assert.isTrue(Option.isNone(lease), "the lease was released")
    }).pipe(Effect.scoped))

  it.live("a listener whose connection dies listens again, and wakes waiters as before", () =>
    Effect.gen(function*() {
      const hubA = makeHub()
      const hubB = makeHub()
      const a = yield* buildProcess(hubA)
      yield* buildProcess(hubB, { reconnectDelay: "20 millis" })
      const channel = PgWakeups.channel({ schema })
      const sql = Context.get(a.context, EffectPgClient.PgClient)
      // Every session listening on the channel is the listener of B (A's own listener too: both die).
      const killed = yield* sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS ok, pid FROM pg_stat_activity
        WHERE query = ${`LISTEN "${channel}"`} AND pid <> pg_backend_pid()`
      assert.isAtLeast(killed.length, 2, "both listeners found")
      const tenant = randomName("tenant")
      // Until B listens again a release may be missed (polling covers it): release until one arrives.
      let round = 0
      const woken = yield* Effect.gen(function*() {
        while (true) {
          const root = `root-${++round}`
          const waiter = yield* waiting(hubB, tenant, root)
          a.wakeups.released(tenant, root)
          const done = yield* Fiber.join(waiter).pipe(Effect.timeoutOption("100 millis"))
          if (done._tag === "Some") return round
          yield* Fiber.interrupt(waiter)
        }
      }).pipe(Effect.timeoutOption(within))
      assert.isTrue(woken._tag === "Some", "B listens again and is woken")
    }).pipe(Effect.scoped))

  it.live("deployments with another schema or table prefix use other channels", () =>
    Effect.sync(() => {
      const channels = new Set([
        PgWakeups.channel({ schema }),
        PgWakeups.channel({ schema: `${schema}_2` }),
        PgWakeups.channel({ schema, tablePrefix: "app2_" }),
        PgWakeups.channel({})
      ])
      assert.strictEqual(channels.size, 4)
      for (const channel of channels) assert.isAtMost(channel.length, 63)
    }))
})
