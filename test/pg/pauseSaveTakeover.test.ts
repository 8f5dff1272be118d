/**
 * From outside, on Postgres: a takeover of a tree's lease in flight (another
 * connection's transaction has moved the lease row to a new holder and not
 * committed yet) while the old holder saves its pause fenced. The old
 * holder's save must wait for the takeover and, once it commits, be refused
 * (LeaseLostError, nothing written) — the README: "a holder frozen with its
 * pause save under way and thawed after a takeover is refused". And the
 * other order: a takeover that rolls back leaves the save to go through.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import pg from "pg"
import { PgStores } from "../../layers/pg/index.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"

const url = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const schema = "break_pause_takeover"
const stores = PgStores.layer({ url, schema, wakeups: false })

const pauseFor = (root: string, pauseId: string) => ({
  tenantId: "t", threadId: `thread-${root}`, pauseId, rootExecutionId: root, executionId: root, interruptId: "i",
  payload: { q: 1 }, status: "Pending" as const, decision: null, createdAt: 1, resolvedAt: null, resolvedBy: null
})

/** Opens a raw connection, begins, moves `root`'s lease row to holder "B" (epoch + 1), and answers commit / rollback. */
const takeoverInFlight = (root: string) =>
  Effect.promise(async () => {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    const pid: number = (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid
    await c.query("BEGIN")
    const moved = await c.query(`UPDATE ${schema}.baton_leases SET holder = 'B', epoch = epoch + 1, expires_at = 999999 WHERE tenant_id = 't' AND root_execution_id = $1`, [root])
    return {
      moved: moved.rowCount,
      /** Whether another backend waits on a lock this transaction holds (asked of Postgres, not timed). */
      blocksAnother: () => Effect.promise(async () => {
        const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [pid])
        return r.rows[0].n > 0
      }),
      end: (how: "COMMIT" | "ROLLBACK") => Effect.promise(async () => { await c.query(how); await c.end() })
    }
  })

/** Until Postgres reports a backend blocked by the takeover's transaction (bounded; each look is a query, no timer). */
const untilBlocked = (tx: { readonly blocksAnother: () => Effect.Effect<boolean> }) =>
  Effect.gen(function*() {
    for (let i = 0; i < 5000; i++) {
      if (yield* tx.blocksAnother()) return true
      yield* Effect.yieldNow
    }
    return false
  })

describe("Postgres: a pause save racing a takeover in another connection's open transaction", () => {
  for (const how of ["COMMIT", "ROLLBACK"] as const) {
    it.live(`takeover then ${how}`, () =>
      Effect.gen(function*() {
        const root = `root-${how}-${Date.now()}`
        const lease = yield* LeaseStore.use((s) => s.acquire("t", root, "A", 1000, 0))
        if (Option.isNone(lease)) return assert.fail("A takes the lease")
        const tx = yield* takeoverInFlight(root)
        assert.strictEqual(tx.moved, 1)
        const save = yield* Effect.forkChild(Effect.exit(PauseStore.use((p) => p.saveFenced(pauseFor(root, `p-${root}`), lease.value, 500))))
        assert.isTrue(yield* untilBlocked(tx), "Postgres reports the save blocked by the takeover's transaction")
        assert.isUndefined(save.pollUnsafe(), "the save waits for the takeover's transaction")
        yield* tx.end(how)
        const exit = yield* Fiber.join(save)
        const stored = yield* PauseStore.use((p) => p.get("t", `p-${root}`))
        if (how === "COMMIT") {
          assert.isTrue(Exit.isFailure(exit), `refused after the takeover: ${String(exit)}`)
          assert.include(String(exit), "LeaseLostError")
          assert.isTrue(Option.isNone(stored), "nothing written")
        } else {
          assert.isTrue(Exit.isSuccess(exit) && exit.value === true, `the takeover rolled back: A still holds it: ${String(exit)}`)
          assert.isTrue(Option.isSome(stored))
        }
      }).pipe(Effect.provide(stores)))
  }
})
