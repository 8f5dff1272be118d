/**
 * `npm run bench:queue:pg` — the child queue's claim path alone (enqueue →
 * claim → finish, no graph) against graphile-worker on the same Postgres,
 * same job count, same worker concurrency, rounds alternating which goes
 * first. Round 0 is a warm-up.
 *
 * - ours: `ChildQueueStore` over Postgres (`PgStores.layerChildQueueStore`,
 *   a pool of `BENCH_CONCURRENCY` + 1 connections). A producer queues the
 *   jobs one at a time (`saveIfAbsent`), waking one idle worker in-process
 *   after each; `BENCH_CONCURRENCY` worker fibers each claim (`FOR UPDATE SKIP
 *   LOCKED`, deepest then oldest) and complete the row, waiting for a wake
 *   (or 1 s) when the queue answers none. A job counts done when its
 *   `complete` returned.
 * - graphile-worker: `makeWorkerUtils().addJob` one at a time, a runner with
 *   `concurrency: BENCH_CONCURRENCY` (its own pool, LISTEN/NOTIFY wake-ups);
 *   a job counts done when its task function returned (graphile completes the
 *   row after that, unmeasured — the comparison is a little kind to it).
 *
 * Each side gets its own fresh schema per round. Prints jobs/s of both and
 * add→start p50/p99 (from just before the add call to the worker starting
 * the job), then `ratio: N.NN` = ours / graphile jobs/s (target ≥ 1.0, with
 * our add→start p50 ≤ 2.5 ms).
 *
 *   npm run bench:queue:pg   (BENCH_ROUNDS=5 BENCH_JOBS=2000 BENCH_CONCURRENCY=10; BATON_TEST_PG_URL or the local test database)
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import * as Os from "node:os"
import { Logger, makeWorkerUtils, run as runGraphile } from "graphile-worker"
import { PgStores } from "../layers/pg/index.ts"
import { ChildQueueStore } from "../src/stores/ChildQueueStore.ts"

const rounds = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 5))
const jobs = Number(process.env.BENCH_JOBS ?? 2000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 10)
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const admin = <A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )
const dropSchema = (schema: string) => admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)

interface Result {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
}

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN
}
/** The middle value (the mean of the two middle ones for an even count). */
const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

const resultOf = (addedAt: ReadonlyArray<number>, startedAt: ReadonlyArray<number>, doneAt: number): Result => ({
  perSecond: jobs / ((doneAt - addedAt[0]!) / 1000),
  p50: quantile(startedAt.map((t, i) => t - addedAt[i]!), 0.5),
  p99: quantile(startedAt.map((t, i) => t - addedAt[i]!), 0.99)
})

/** A wake-up for one idle worker: `next` resolves at a `notify` (each notify wakes the longest-waiting one, as graphile nudges one idle worker per job). */
const signal = () => {
  let waiters: Array<() => void> = []
  return {
    next: Effect.callback<void>((resume) => {
      const f = () => resume(Effect.void)
      waiters.push(f)
      return Effect.sync(() => {
        waiters = waiters.filter((w) => w !== f)
      })
    }),
    notify: () => {
      const first = waiters.shift()
      if (first !== undefined) first()
    }
  }
}

const ours = async (round: number): Promise<Result> => {
  const schema = `baton_bench_queue_${process.pid}_${round}`
  await dropSchema(schema)
  const scope = Effect.runSync(Scope.make())
  try {
    const ctx = await Effect.runPromise(Layer.buildWithScope(PgStores.layerChildQueueStore({ url, schema, maxConnections: concurrency + 1 }), scope))
    const queue = Context.get(ctx, ChildQueueStore)
    const addedAt: Array<number> = []
    const startedAt: Array<number> = []
    const wake = signal()
    let done = 0
    const finished = Effect.runSync(Deferred.make<number>())
    const worker = (n: number) =>
      Effect.gen(function*() {
        while (true) {
          const claimed = yield* queue.claim(`worker-${n}`, 30_000, Date.now())
          if (Option.isNone(claimed)) {
            yield* Effect.raceFirst(wake.next, Effect.sleep("1 second"))
            continue
          }
          startedAt[claimed.value.position!] = performance.now()
          yield* queue.complete({ tenantId: "bench", executionId: claimed.value.executionId, instanceId: `worker-${n}`, outcome: "Answered", result: null })
          if (++done === jobs) yield* Deferred.succeed(finished, performance.now())
        }
      })
    const workers = Effect.runFork(Effect.forEach(Array.from({ length: concurrency }, (_, n) => n), worker, { concurrency: "unbounded" }))
    await Effect.runPromise(Effect.gen(function*() {
      for (let i = 0; i < jobs; i++) {
        addedAt[i] = performance.now()
        yield* queue.saveIfAbsent({
          tenantId: "bench",
          executionId: `job-${i}`,
          rootExecutionId: "root",
          parentExecutionId: "root",
          threadId: `job-${i}`,
          depth: 2,
          workflowName: "job",
          input: { i },
          status: "Queued",
          claimedBy: null,
          queuedAt: Date.now(),
          claimExpiresAt: null,
          result: null,
          launchId: "bench",
          position: i
        })
        wake.notify()
      }
    }))
    const doneAt = await Effect.runPromise(Deferred.await(finished))
    await Effect.runPromise(Fiber.interrupt(workers))
    return resultOf(addedAt, startedAt, doneAt)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await dropSchema(schema)
  }
}

/** graphile-worker logs every job at info: silenced, as ours logs nothing per job. */
const quiet = new Logger(() => () => {})

const graphile = async (round: number): Promise<Result> => {
  const schema = `graphile_bench_${process.pid}_${round}`
  await dropSchema(schema)
  const addedAt: Array<number> = []
  const startedAt: Array<number> = []
  let done = 0
  let resolveDone!: (at: number) => void
  const finished = new Promise<number>((resolve) => (resolveDone = resolve))
  const utils = await makeWorkerUtils({ connectionString: url, schema, logger: quiet })
  await utils.migrate()
  const runner = await runGraphile({
    connectionString: url,
    schema,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    taskList: {
      job: async (payload) => {
        startedAt[(payload as { i: number }).i] = performance.now()
        if (++done === jobs) resolveDone(performance.now())
      }
    }
  })
  try {
    for (let i = 0; i < jobs; i++) {
      addedAt[i] = performance.now()
      await utils.addJob("job", { i })
    }
    const doneAt = await finished
    return resultOf(addedAt, startedAt, doneAt)
  } finally {
    await runner.stop()
    await utils.release()
    await dropSchema(schema)
  }
}

const main = async () => {
  console.log(`bench:queue:pg — ${jobs} jobs, concurrency ${concurrency}, ${rounds - 1} counted rounds (round 0 warms up); ${Os.cpus().length} cores, load ${Os.loadavg()[0]!.toFixed(2)}`)
  const mine: Array<Result> = []
  const theirs: Array<Result> = []
  const ratios: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const got: { ours?: Result; graphile?: Result } = {}
    for (const side of round % 2 === 0 ? ["ours", "graphile"] as const : ["graphile", "ours"] as const) {
      got[side] = side === "ours" ? await ours(round) : await graphile(round)
    }
    const a = got.ours!
    const b = got.graphile!
    console.log(
      `round ${round}: ours ${a.perSecond.toFixed(0)} jobs/s (add→start p50 ${a.p50.toFixed(2)} ms, p99 ${a.p99.toFixed(2)} ms) | ` +
        `graphile-worker ${b.perSecond.toFixed(0)} jobs/s (add→start p50 ${b.p50.toFixed(2)} ms, p99 ${b.p99.toFixed(2)} ms)` +
        (round === 0 ? "  [warm-up]" : "")
    )
    if (round === 0) continue
    mine.push(a)
    theirs.push(b)
    ratios.push(a.perSecond / b.perSecond)
  }
  console.log(
    `median: ours ${median(mine.map((r) => r.perSecond)).toFixed(0)} jobs/s, add→start p50 ${median(mine.map((r) => r.p50)).toFixed(2)} ms p99 ${median(mine.map((r) => r.p99)).toFixed(2)} ms | ` +
      `graphile-worker ${median(theirs.map((r) => r.perSecond)).toFixed(0)} jobs/s, add→start p50 ${median(theirs.map((r) => r.p50)).toFixed(2)} ms p99 ${median(theirs.map((r) => r.p99)).toFixed(2)} ms`
  )
  console.log(`ratio: ${median(ratios).toFixed(2)}`)
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
