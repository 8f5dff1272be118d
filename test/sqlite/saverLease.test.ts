/**
 * The lease expiry the fenced savers rely on: for one (holder, epoch) the
 * stored `expires_at` only moves forward. A renewal whose clock read is
 * older than one already stored (the background renewal and a renewing
 * checkpoint write of one holder landing out of order), or one with a
 * shorter lease, keeps the later expiry — else the holder, which trusts
 * the latest confirmation, would act past the expiry the store holds, and
 * another instance could take the tree meanwhile. On SQLite and Postgres.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { PgClient, PgMigrations } from "../../layers/pg/index.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../../layers/sqlite/SqliteClient.ts"
import { testSchema, url } from "../pg/db.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("saver-lease")
const schema = testSchema("saverlease")
const ttl = 30_000

const backends = [
  {
    name: "SQLite",
    client: SqliteClient.layer({ path: Path.join(dir, "leases.db") }) as Layer.Layer<SqlClient.SqlClient, unknown>,
    migrate: SqlMigrations.migrate()
  },
  {
    name: "Postgres",
    client: PgClient.layer({ url, schema, maxConnections: 2 }) as Layer.Layer<SqlClient.SqlClient, unknown>,
    migrate: PgMigrations.migrate({ schema })
  }
] as const

for (const backend of backends) {
  describe(`lease expiry on ${backend.name}`, () => {
    it.live("renew never moves a holder's expiry backward: a late renewal read earlier, or a shorter lease, keeps the later expiry", () =>
      Effect.gen(function*() {
        yield* backend.migrate
        const leases = yield* SqlLeaseStore.make()
        const root = `root-${Date.now()}-${Math.random()}`
        const lease = Option.getOrThrow(yield* leases.acquire("default", root, "h1", ttl, 0))
        assert.strictEqual(lease.expiresAt, ttl)
        const stored = () => Effect.map(leases.get("default", root), (l) => Option.getOrThrow(l).expiresAt)

        assert.isTrue(yield* leases.renew(lease, ttl, 10_000), "a renewal read at 10 s")
        assert.strictEqual(yield* stored(), 40_000)
        // a renewal whose clock read (5 s) is older than the stored one lands late: still held, nothing moves back
        assert.isTrue(yield* leases.renew(lease, ttl, 5_000), "the late renewal finds the lease live and held")
        assert.strictEqual(yield* stored(), 40_000, "the later expiry stays")
        // a shorter lease at a later read: still never earlier than what was stored
        assert.isTrue(yield* leases.renew(lease, 1_000, 20_000))
        assert.strictEqual(yield* stored(), 40_000, "a shorter lease does not shorten the stored one")
        // and forward still moves it
        assert.isTrue(yield* leases.renew(lease, ttl, 25_000))
        assert.strictEqual(yield* stored(), 55_000)
        // so no one takes the tree before the latest confirmed expiry
        assert.isTrue(Option.isNone(yield* leases.acquire("default", root, "h2", ttl, 54_999)), "taken before the expiry the holder was told")
        const next = Option.getOrThrow(yield* leases.acquire("default", root, "h2", ttl, 55_000))
        assert.strictEqual(next.epoch, lease.epoch + 1)
        assert.isFalse(yield* leases.renew(lease, ttl, 55_000), "the old holder's renewal after the takeover")
      }).pipe(Effect.provide(Layer.orDie(backend.client))))
  })
}
