/**
 * The checkpoint benchmark both backends run (SQLite: bench/checkpoint.ts,
 * Postgres: bench/checkpoint-pg.ts): the workload, the fence ours writes
 * under, and the alternating rounds that end with `ratio: N.NN`.
 *
 * Workload per round and saver (fresh storage each): `threads` threads ×
 * `steps` steps of put + putWrites + getTuple, the state growing from 1 KB to
 * 4 KB, then one full `list` per thread.
 */
import { type BaseCheckpointSaver, type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import type { RunnableConfig } from "@langchain/core/runnables"
import { Effect, Option } from "effect"
import type { LeaseLostError } from "../src/stores/Errors.ts"
import type { Fence } from "../src/stores/Fence.ts"
import type { Lease } from "../src/stores/Lease.ts"
import type { LeaseStoreShape } from "../src/stores/LeaseStore.ts"

export const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
export const threads = Number(process.env.BENCH_THREADS ?? 50)
export const steps = Number(process.env.BENCH_STEPS ?? 20)
const ttlMillis = 30_000
/** The runtime's default renewal period: a third of the lease. */
const renewMillis = 10_000

/** One saver under test, on fresh storage. */
export interface Subject {
  readonly saver: BaseCheckpointSaver
  /** Extra `configurable` for a thread (ours: the fence). */
  readonly configurable: (threadId: string) => Promise<Record<string, unknown>>
  readonly close: () => Promise<void>
}

/** A holder's fence over a lease it really acquired (the runtime's, minus its fibers). */
export const fenceFor = async (leases: LeaseStoreShape, threadId: string): Promise<Fence> => {
  const acquired = await Effect.runPromise(leases.acquire("default", threadId, "bench-instance", ttlMillis, Date.now()))
  if (Option.isNone(acquired)) throw new Error(`bench: could not acquire the lease of ${threadId}`)
  let lease: Lease = acquired.value
  let lostWith: LeaseLostError | undefined
  return {
    get lease() {
      return lease
    },
    ttlMillis,
    renewMillis,
    now: () => Date.now(),
    refusal: () => lostWith,
    confirmed: (_readAt, expiresAt) => {
      lease = { ...lease, expiresAt }
    },
    lost: (error) => {
      lostWith = error
    },
    renewBeforeWrite: async () => {}
  }
}

/** A message list of about `size` bytes. */
const messages = (size: number, step: number) => {
  const out: Array<{ role: string; content: string }> = []
  let total = 0
  for (let i = 0; total < size; i++) {
    const content = `step ${step} message ${i} `.padEnd(120, "x")
    out.push({ role: i % 2 === 0 ? "user" : "assistant", content })
    total += content.length + 30
  }
  return out
}

/** Runs the workload; answers ops per second. */
export const workload = async (subject: Subject): Promise<number> => {
  const { saver } = subject
  const extras = await Promise.all(Array.from({ length: threads }, (_, t) => subject.configurable(`thread-${t}`)))
  let ops = 0
  const start = performance.now()
  for (let t = 0; t < threads; t++) {
    const threadId = `thread-${t}`
    const base = { thread_id: threadId, checkpoint_ns: "", ...extras[t] }
    let config: RunnableConfig = { configurable: { ...base } }
    let checkpoint: Checkpoint = emptyCheckpoint()
    for (let s = 0; s < steps; s++) {
      const size = 1024 + Math.round((3072 * s) / Math.max(1, steps - 1))
      const version = s + 1
      checkpoint = {
        ...checkpoint,
        id: uuid6(-1),
        ts: new Date().toISOString(),
        channel_values: { messages: messages(size, s), step: s },
        channel_versions: { ...checkpoint.channel_versions, messages: version, step: version },
        versions_seen: { agent: { messages: version - 1 } }
      }
      const saved = await saver.put(config, checkpoint, { source: "loop", step: s, parents: {} }, { messages: version, step: version })
      config = { configurable: { ...base, checkpoint_id: saved.configurable?.checkpoint_id } }
      await saver.putWrites(config, [["messages", { role: "assistant", content: `reply ${s}` }]], `task-${t}-${s}`)
      const tuple = await saver.getTuple({ configurable: { ...base } })
      if (tuple?.checkpoint.id !== checkpoint.id) throw new Error(`bench: getTuple answered ${tuple?.checkpoint.id}, expected ${checkpoint.id}`)
      ops += 3
    }
    let listed = 0
    for await (const _ of saver.list({ configurable: { thread_id: threadId } })) listed++
    if (listed !== steps) throw new Error(`bench: list answered ${listed} checkpoints, expected ${steps}`)
    ops += 1
  }
  return (ops / (performance.now() - start)) * 1000
}

export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

/**
 * A warm-up round of each (not counted), then `rounds` rounds alternating
 * which saver goes first; prints each round, the medians and, last,
 * `ratio: N.NN` (ours / theirs: above 1 means ours is faster).
 */
export const compare = async (options: {
  readonly title: string
  readonly ours: { readonly label: string; readonly open: (round: number) => Promise<Subject> }
  readonly theirs: { readonly label: string; readonly open: (round: number) => Promise<Subject> }
}) => {
  const once = async (side: typeof options.ours, round: number) => {
    const subject = await side.open(round)
    try {
      return await workload(subject)
    } finally {
      await subject.close()
    }
  }
  console.log(`${options.title}: ${threads} threads × ${steps} steps (put + putWrites + getTuple, 1→4 KB) + list per thread; ${rounds} rounds`)
  await once(options.ours, 0)
  await once(options.theirs, 0)
  const a: Array<number> = []
  const b: Array<number> = []
  for (let r = 1; r <= rounds; r++) {
    if (r % 2 === 1) {
      a.push(await once(options.ours, r))
      b.push(await once(options.theirs, r))
    } else {
      b.push(await once(options.theirs, r))
      a.push(await once(options.ours, r))
    }
    console.log(`round ${r}: ${options.ours.label} ${a[r - 1]!.toFixed(0)} ops/s, ${options.theirs.label} ${b[r - 1]!.toFixed(0)} ops/s`)
  }
  const oursOps = median(a)
  const theirsOps = median(b)
  console.log(`median: ${options.ours.label} ${oursOps.toFixed(0)} ops/s, ${options.theirs.label} ${theirsOps.toFixed(0)} ops/s`)
  console.log(`ratio: ${(oursOps / theirsOps).toFixed(2)}`)
}
