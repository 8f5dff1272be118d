/**
 * Lease throughput on Postgres: 8 clients (8 pools of one connection each,
 * as 8 instances) contend for a few execution trees. Each client loops:
 * acquire a tree's lease (one `INSERT … ON CONFLICT … DO UPDATE … WHERE
 * expires_at <= now RETURNING`); when it wins, renew it once and release it.
 * The bench checks, in-process, that no two clients ever hold one tree at once.
 *
 *   npm run bench:lease:pg     (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                               BENCH_CLIENTS=8 BENCH_ROOTS=4 BENCH_SECONDS=5)
 *
 * Prints acquire (won + lost), renew and release operations per second.
 */
import { Effect, Option } from "effect"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import { freshSchema, runInSchema, storesPerConnection } from "./pgSchema.ts"

const clients = Number(process.env.BENCH_CLIENTS ?? 8)
const roots = Number(process.env.BENCH_ROOTS ?? 4)
const seconds = Number(process.env.BENCH_SECONDS ?? 5)
const ttl = 30_000
const schema = freshSchema("bench_lease")

const main = Effect.gen(function*() {
  const stores = yield* storesPerConnection(clients, schema, SqlLeaseStore.make())
  const counts = { acquired: 0, refused: 0, renewed: 0, released: 0 }
  const holders = new Map<number, number>()
  const until = Date.now() + seconds * 1000
  const client = (i: number) =>
    Effect.gen(function*() {
      const store = stores[i]!
      let k = i % roots
      while (Date.now() < until) {
        k = (k + 1) % roots
        const got = yield* store.acquire("default", `root-${k}`, `client-${i}`, ttl, Date.now())
        if (Option.isNone(got)) {
          counts.refused++
          continue
        }
        counts.acquired++
        if (holders.has(k)) return yield* Effect.die(new Error(`root-${k} held by client ${holders.get(k)} and client ${i} at once`))
        holders.set(k, i)
        if (yield* store.renew(got.value, ttl, Date.now())) counts.renewed++
        holders.delete(k)
        if (yield* store.release(got.value)) counts.released++
      }
    })
  console.log(`lease bench (Postgres): ${clients} clients (one connection each) contending for ${roots} trees, ${seconds} s`)
  const started = performance.now()
  yield* Effect.all(Array.from({ length: clients }, (_, i) => client(i)), { concurrency: "unbounded" })
  const elapsed = (performance.now() - started) / 1000
  const rate = (n: number) => (n / elapsed).toFixed(0)
  console.log(`acquire: ${rate(counts.acquired + counts.refused)}/s (${rate(counts.acquired)} won, ${rate(counts.refused)} refused)`)
  console.log(`renew: ${rate(counts.renewed)}/s`)
  console.log(`release: ${rate(counts.released)}/s`)
  console.log(`total: ${rate(counts.acquired + counts.refused + counts.renewed + counts.released)} lease operations/s`)
})

await runInSchema(schema, main)
