/**
 * One instance, as its own process, for the schedule test of real processes:
 * a 2 s lease (a SIGKILLed leader's lease expires within 2 s) and a 500 ms
 * sweep, over a Postgres schema. Its workflow `tick-job` has one step.
 *
 * Output lines: `<id> ready`, `<id> run <threadId> <t>` when a step runs
 * (t: wall-clock milliseconds since the epoch).
 *
 * Usage: node test/e2e/scheduleWorker.ts <schema> <instance id>
 *        (BATON_TEST_PG_URL or the local test database)
 */
import { Effect, Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import { tickJob } from "./tickJob.ts"

const [schema, instanceId] = process.argv.slice(2)
if (schema === undefined || instanceId === undefined) throw new Error("usage: scheduleWorker.ts <schema> <instance id>")
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const job = tickJob(say)

const stores = PgStores.layer({ url, schema, applicationName: `schedules-${instanceId}`, maxConnections: 4 })

Effect.runFork(Effect.gen(function*() {
  yield* Layer.build(Baton.layer({ workflows: [job], instanceId, lease: "2 seconds", sweepInterval: "500 millis" }).pipe(Layer.provide(stores)))
  say("ready")
  return yield* Effect.never
}).pipe(Effect.scoped))
