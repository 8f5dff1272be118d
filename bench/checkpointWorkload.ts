/**
 * The checkpoint benchmark both backends run (SQLite: bench/checkpoint.ts,
 * Postgres: bench/checkpoint-pg.ts): the workloads, the fence ours writes
 * under, and the alternating rounds that end with `ratio: N.NN`.
 *
 * Measures, each on fresh storage per round and saver, each at concurrency 1
 * and 8 (`threads` threads split over that many lanes running at once):
 * - `simple`: `threads` × `steps` steps of put + putWrites + getTuple, a
 *   state of plain `{ role, content }` objects growing from 1 KB to 4 KB, one
 *   write per putWrites, then one full `list` per thread;
 * - `realistic`: the same shape with what a LangGraph agent stores — five
 *   channels (`messages` of LangChain message objects, growing by two a step,
 *   tool calls included; `context`, `plan`, `scratch`, `step`), two or three
 *   of them changed per step, two or three writes per putWrites; every
 *   getTuple and list checked (ids, message classes and contents, pending
 *   writes);
 * - `graph`: runs of a 20-node linear graph compiled with the saver as its
 *   checkpointer, each node appending an AIMessage, `durability: "sync"` for
 *   both; answers runs per second;
 * - `writes`: the write path alone on a large file — the storage prefilled
 *   (outside the timing) with `BENCH_PREFILL` (10,000) threads of one
 *   checkpoint each, then the realistic workload's put + putWrites with no
 *   read between; answers steps per second, and the p99 of a putWrites call
 *   (printed per case: at concurrency 8 it is the write tail the lanes see).
 */
import { AIMessage, type BaseMessage, HumanMessage, isBaseMessage, SystemMessage, ToolMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import { Annotation, END, messagesStateReducer, START, StateGraph } from "@langchain/langgraph"
import { type BaseCheckpointSaver, type Checkpoint, emptyCheckpoint, type PendingWrite, uuid6 } from "@langchain/langgraph-checkpoint"
import { Effect, Option } from "effect"
import * as Os from "node:os"
import type { LeaseLostError } from "../src/stores/Errors.ts"
import type { Fence } from "../src/stores/Fence.ts"
import type { Lease } from "../src/stores/Lease.ts"
import type { LeaseStoreShape } from "../src/stores/LeaseStore.ts"

export const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
export const threads = Number(process.env.BENCH_THREADS ?? 48)
export const steps = Number(process.env.BENCH_STEPS ?? 20)
/**
 * `BENCH_CLOCK=cpu` times this process's CPU (user + system) instead of the
 * wall clock: on a machine shared with other work the wall clock of a
 * synchronous workload (SQLite) swings by ±30 % per round with the load,
 * its CPU time far less. Not for Postgres (the server's work is elsewhere).
 */
const cpuClock = process.env.BENCH_CLOCK === "cpu"
const clock = (): number => {
  if (!cpuClock) return performance.now()
  const { system, user } = process.cpuUsage()
  return (user + system) / 1000
}

/** Graph runs per round and saver. */
export const graphRuns = Number(process.env.BENCH_GRAPH_RUNS ?? 32)
const graphNodes = 20
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

const fail = (message: string): never => {
  throw new Error(`bench: ${message}`)
}

/** Runs `count` jobs on `lanes` lanes at once (job i on lane i mod lanes, in order). */
const inLanes = async (count: number, lanes: number, job: (i: number) => Promise<void>) => {
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, async (_, lane) => {
    for (let i = lane; i < count; i += lanes) await job(i)
  }))
}

/** A plain message list of about `size` bytes (the simple workload). */
const plainMessages = (size: number, step: number) => {
  const out: Array<{ role: string; content: string }> = []
  let total = 0
  for (let i = 0; total < size; i++) {
    const content = `step ${step} message ${i} `.padEnd(120, "x")
    out.push({ role: i % 2 === 0 ? "user" : "assistant", content })
    total += content.length + 30
  }
  return out
}

/** The simple workload for one thread: answers its ops. */
const simpleThread = async (subject: Subject, t: number, extra: Record<string, unknown>): Promise<number> => {
  const { saver } = subject
  const threadId = `thread-${t}`
  const base = { thread_id: threadId, checkpoint_ns: "", ...extra }
  let config: RunnableConfig = { configurable: { ...base } }
  let checkpoint: Checkpoint = emptyCheckpoint()
  for (let s = 0; s < steps; s++) {
    const size = 1024 + Math.round((3072 * s) / Math.max(1, steps - 1))
    const version = s + 1
    checkpoint = {
      ...checkpoint,
      id: uuid6(-1),
      ts: new Date().toISOString(),
      channel_values: { messages: plainMessages(size, s), step: s },
      channel_versions: { ...checkpoint.channel_versions, messages: version, step: version },
      versions_seen: { agent: { messages: version - 1 } }
    }
    const saved = await saver.put(config, checkpoint, { source: "loop", step: s, parents: {} }, { messages: version, step: version })
    config = { configurable: { ...base, checkpoint_id: saved.configurable?.checkpoint_id } }
    await saver.putWrites(config, [["messages", { role: "assistant", content: `reply ${s}` }]], `task-${t}-${s}`)
    const tuple = await saver.getTuple({ configurable: { ...base } })
    if (tuple?.checkpoint.id !== checkpoint.id) fail(`getTuple answered ${tuple?.checkpoint.id}, expected ${checkpoint.id}`)
  }
  let listed = 0
  for await (const _ of saver.list({ configurable: { thread_id: threadId } })) listed++
  if (listed !== steps) fail(`list answered ${listed} checkpoints, expected ${steps}`)
  return steps * 3 + 1
}

const words = "the agent looked up the order, checked the refund policy and drafted a reply for the customer about shipping".split(" ")
const text = (seed: number, length: number) => {
  let out = ""
  for (let i = 0; out.length < length; i++) out += words[(seed * 7 + i * 3) % words.length] + " "
  return out.trim()
}

/** Step `s`'s two new messages: the user's (or a tool result) and the model's (a tool call every third step). */
const newMessages = (t: number, s: number): Array<BaseMessage> => {
  const ai = s % 3 === 0
    ? new AIMessage({
      content: text(s, 160),
      id: `ai-${t}-${s}`,
      tool_calls: [{ id: `call-${t}-${s}`, name: "lookup_order", args: { orderId: `o-${t}-${s}`, fields: ["status", "items"] }, type: "tool_call" }],
      response_metadata: { model: "bench-model", finish_reason: "tool_calls" },
      usage_metadata: { input_tokens: 400 + s * 40, output_tokens: 60, total_tokens: 460 + s * 40 }
    })
    : new AIMessage({
      content: text(s, 360),
      id: `ai-${t}-${s}`,
      response_metadata: { model: "bench-model", finish_reason: "stop" },
      usage_metadata: { input_tokens: 400 + s * 40, output_tokens: 120, total_tokens: 520 + s * 40 }
    })
  const before = s % 3 === 1
    ? new ToolMessage({ content: JSON.stringify({ status: "shipped", items: [text(s, 40), text(s + 1, 40)] }), tool_call_id: `call-${t}-${s - 1}`, id: `tool-${t}-${s}` })
    : new HumanMessage({ content: text(s + 11, 220), id: `human-${t}-${s}` })
  return [before, ai]
}

/** The channels a realistic step changes: `messages` and `step` always, one of the others every other step. */
const changedAt = (s: number): ReadonlyArray<string> => s % 2 === 0 ? ["messages", "step", ["context", "plan", "scratch"][(s / 2) % 3]!] : ["messages", "step"]

const channelValue = (channel: string, t: number, s: number, messages: ReadonlyArray<BaseMessage>): unknown => {
  switch (channel) {
    case "messages":
      return messages
    case "step":
      return s
    case "context":
      return { customer: { id: `c-${t}`, tier: "gold", locale: "en-GB" }, notes: text(s, 600), orders: [`o-${t}-${s}`, `o-${t}-${s - 1}`] }
    case "plan":
      return `${s}: ${text(s + 3, 200)}`
    default:
      return { attempts: s, lastTool: "lookup_order", cache: { [`o-${t}-${s}`]: text(s, 120) } }
  }
}

/** One step of the realistic workload: the checkpoint to put, its new versions, the writes to put after it, the messages so far. */
interface RealisticStep {
  readonly checkpoint: Checkpoint
  readonly newVersions: Record<string, number>
  readonly writes: Array<PendingWrite>
  readonly messages: ReadonlyArray<BaseMessage>
}

/** The realistic workload's steps for thread `t`. */
function* realisticSteps(t: number): Generator<RealisticStep> {
  let messages: Array<BaseMessage> = [new SystemMessage({ content: text(1, 300), id: `sys-${t}` }), new HumanMessage({ content: text(2, 200), id: `first-${t}` })]
  const values: Record<string, unknown> = {}
  for (const c of ["context", "plan", "scratch"]) values[c] = channelValue(c, t, 0, messages)
  let checkpoint: Checkpoint = {
    ...emptyCheckpoint(),
    channel_versions: { messages: 0, step: 0, context: 0, plan: 0, scratch: 0 }
  }
  for (let s = 0; s < steps; s++) {
    messages = [...messages, ...newMessages(t, s)]
    const newVersions: Record<string, number> = {}
    for (const c of changedAt(s)) {
      values[c] = channelValue(c, t, s, messages)
      newVersions[c] = (checkpoint.channel_versions[c] as number) + 1
    }
    checkpoint = {
      ...checkpoint,
      id: uuid6(-1),
      ts: new Date().toISOString(),
      channel_values: { ...values },
      channel_versions: { ...checkpoint.channel_versions, ...newVersions },
      versions_seen: { agent: { messages: newVersions.messages! - 1 }, tools: { messages: newVersions.messages! - 1 } }
    }
    const writes: Array<PendingWrite> = [["messages", [new AIMessage({ content: text(s + 5, 200), id: `w-${t}-${s}` })]], ["step", s + 1]]
    if (s % 2 === 1) writes.push(["plan", text(s + 9, 120)])
    yield { checkpoint, newVersions, writes, messages }
  }
}

/** The realistic workload for one thread: answers its ops. Every read is checked. */
const realisticThread = async (subject: Subject, t: number, extra: Record<string, unknown>): Promise<number> => {
  const { saver } = subject
  const threadId = `thread-${t}`
  const base = { thread_id: threadId, checkpoint_ns: "", ...extra }
  let config: RunnableConfig = { configurable: { ...base } }
  let s = 0
  for (const { checkpoint, newVersions, writes, messages } of realisticSteps(t)) {
    const saved = await saver.put(config, checkpoint, { source: "loop", step: s, parents: {} }, newVersions)
    config = { configurable: { ...base, checkpoint_id: saved.configurable?.checkpoint_id } }
    await saver.putWrites(config, writes, `task-${t}-${s}`)
    const tuple = await saver.getTuple({ configurable: { ...base } })
    if (tuple?.checkpoint.id !== checkpoint.id) fail(`getTuple answered ${tuple?.checkpoint.id}, expected ${checkpoint.id}`)
    const read = tuple!.checkpoint.channel_values.messages as Array<BaseMessage> | undefined
    const last = read?.[read.length - 1]
    if (read?.length !== messages.length || !isBaseMessage(last) || last.content !== messages[messages.length - 1]!.content) {
      fail(`getTuple answered ${read?.length} messages (last ${String(last?.content).slice(0, 20)}), expected ${messages.length}`)
    }
    if (tuple!.checkpoint.channel_values.step !== s || tuple!.pendingWrites?.length !== writes.length) {
      fail(`getTuple answered step ${tuple!.checkpoint.channel_values.step} with ${tuple!.pendingWrites?.length} writes, expected ${s} with ${writes.length}`)
    }
    s++
  }
  let listed = 0
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    const read = tuple.checkpoint.channel_values.messages as Array<BaseMessage>
    if (read.length !== 2 + 2 * (steps - listed) || !isBaseMessage(read[0])) fail(`list answered ${read.length} messages at ${listed}`)
    listed++
  }
  if (listed !== steps) fail(`list answered ${listed} checkpoints, expected ${steps}`)
  return steps * 3 + 1
}

const GraphState = Annotation.Root({
  messages: Annotation<Array<BaseMessage>>({ reducer: messagesStateReducer, default: () => [] }),
  count: Annotation<number>({ reducer: (_, b) => b, default: () => 0 })
})

/** A 20-node linear graph, each node appending an AIMessage and counting. */
const graphOf = (saver: BaseCheckpointSaver) => {
  let g: any = new StateGraph(GraphState)
  const names = Array.from({ length: graphNodes }, (_, i) => `n${String(i).padStart(2, "0")}`)
  for (const name of names) {
    g = g.addNode(name, (s: typeof GraphState.State) => ({
      messages: [new AIMessage({ content: text(s.count, 120), id: `${name}-${s.count}` })],
      count: s.count + 1
    }))
  }
  g = g.addEdge(START, names[0]!)
  for (let i = 1; i < names.length; i++) g = g.addEdge(names[i - 1]!, names[i]!)
  return g.addEdge(names[names.length - 1]!, END).compile({ checkpointer: saver })
}

/** Threads of one checkpoint each written before the `writes` measure. */
const prefill = Number(process.env.BENCH_PREFILL ?? 10_000)

/** Fills the subject's storage with `prefill` threads of one small checkpoint each. */
const prefilled = async (subject: Subject, round: number) => {
  const extra = await subject.configurable(`prefill-${round}`)
  await inLanes(prefill, 8, async (i) => {
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step: 0 }, channel_versions: { step: 1 } }
    await subject.saver.put({ configurable: { thread_id: `prefill-${round}-${i}`, checkpoint_ns: "", ...extra } }, checkpoint, { source: "loop", step: 0, parents: {} }, { step: 1 })
  })
}

/** The write path of the realistic workload for one thread (no reads): answers its steps; each putWrites' latency goes to `latencies`. */
const writesThread = async (subject: Subject, t: number, extra: Record<string, unknown>, latencies: Array<number>): Promise<number> => {
  const { saver } = subject
  const base = { thread_id: `thread-${t}`, checkpoint_ns: "", ...extra }
  let config: RunnableConfig = { configurable: { ...base } }
  let s = 0
  for (const { checkpoint, newVersions, writes } of realisticSteps(t)) {
    const saved = await saver.put(config, checkpoint, { source: "loop", step: s, parents: {} }, newVersions)
    config = { configurable: { ...base, checkpoint_id: saved.configurable?.checkpoint_id } }
    const t0 = performance.now()
    await saver.putWrites(config, writes, `task-${t}-${s}`)
    latencies.push(performance.now() - t0)
    s++
  }
  return steps
}

/** The p99 of `xs` (ms). */
export const p99 = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? Number.NaN
}

/** The putWrites p99 of the last `writes` measure. */
let lastPutWritesP99 = Number.NaN

export type Measure = "simple" | "realistic" | "graph" | "writes"

/** Runs one measure on a subject at a concurrency; answers ops (graph: runs) per second. */
export const measure = async (subject: Subject, kind: Measure, concurrency: number, round: number): Promise<number> => {
  if (kind === "graph") {
    const graph = graphOf(subject.saver)
    const ids = Array.from({ length: graphRuns }, (_, i) => `run-${round}-${i}`)
    const extras = await Promise.all(ids.map((id) => subject.configurable(id)))
    const start = clock()
    await inLanes(graphRuns, concurrency, async (i) => {
      const out = await graph.invoke({ messages: [new HumanMessage({ content: "go", id: `go-${i}` })] }, {
        configurable: { thread_id: ids[i], ...extras[i] },
        durability: "sync"
      })
      if (out.count !== graphNodes || out.messages.length !== graphNodes + 1) fail(`a graph run ended with count ${out.count}, ${out.messages.length} messages`)
    })
    return (graphRuns / (clock() - start)) * 1000
  }
  if (kind === "writes") await prefilled(subject, round)
  const extras = await Promise.all(Array.from({ length: threads }, (_, t) => subject.configurable(`thread-${t}`)))
  const latencies: Array<number> = []
  const perThread = kind === "simple" ? simpleThread : kind === "realistic" ? realisticThread : (subject: Subject, t: number, extra: Record<string, unknown>) => writesThread(subject, t, extra, latencies)
  let ops = 0
  const start = clock()
  await inLanes(threads, concurrency, async (t) => {
    const done = await perThread(subject, t, extras[t]!) // (not `ops += await …`: the lanes would overwrite each other)
    ops += done
  })
  const perSecond = (ops / (clock() - start)) * 1000
  if (kind === "writes") lastPutWritesP99 = p99(latencies)
  return perSecond
}

export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

interface Case {
  readonly kind: Measure
  readonly concurrency: number
}

/** The measures run, in order (`BENCH_MEASURES`, e.g. "realistic-1,realistic-8"; default all eight). */
const cases: ReadonlyArray<Case> = (process.env.BENCH_MEASURES ?? "simple-1,simple-8,realistic-1,realistic-8,graph-1,graph-8,writes-1,writes-8")
  .split(",")
  .map((s) => s.trim())
  .filter((s) => s.length > 0)
  .map((s) => {
    const [kind, c] = s.split("-")
    if ((kind !== "simple" && kind !== "realistic" && kind !== "graph" && kind !== "writes") || !(Number(c) >= 1)) {
      fail(`BENCH_MEASURES: "${s}" is not <simple|realistic|graph|writes>-<concurrency>`)
    }
    return { kind: kind as Measure, concurrency: Number(c) }
  })

const label = (c: Case) => `${c.kind} c${c.concurrency}`

/**
 * A warm-up round of each case and saver (not counted), then `rounds` rounds
 * alternating which saver goes first; prints each round, each case's medians
 * and ratio, and last `ratio: N.NN` (ours / theirs ops for the realistic
 * workload at concurrency 1, or the first case run; above 1 means ours is faster).
 */
export const compare = async (options: {
  readonly title: string
  readonly ours: { readonly label: string; readonly open: (round: number) => Promise<Subject> }
  readonly theirs: { readonly label: string; readonly open: (round: number) => Promise<Subject> }
}) => {
  let opened = 0
  const once = async (side: typeof options.ours, c: Case, round: number) => {
    const subject = await side.open(opened++)
    try {
      return await measure(subject, c.kind, c.concurrency, round)
    } finally {
      await subject.close()
    }
  }
  // The putWrites p99 of each `writes` case, per round and side.
  const tails = cases.map(() => ({ ours: [] as Array<number>, theirs: [] as Array<number> }))
  console.log(
    `${options.title}${cpuClock ? " (per CPU second of this process)" : ""}: ${threads} threads × ${steps} steps (put + putWrites + getTuple) + list per thread; graph: ${graphRuns} runs of ${graphNodes} nodes; ` +
      `${rounds} rounds + warm-up; ${Os.cpus().length} cores, load ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`
  )
  const ours = cases.map(() => [] as Array<number>)
  const theirs = cases.map(() => [] as Array<number>)
  for (let r = 0; r <= rounds; r++) {
    const line: Array<string> = []
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]!
      let a: number
      let b: number
      let tailA = Number.NaN
      let tailB = Number.NaN
      if ((r + i) % 2 === 0) {
        a = await once(options.ours, c, r)
        tailA = lastPutWritesP99
        b = await once(options.theirs, c, r)
        tailB = lastPutWritesP99
      } else {
        b = await once(options.theirs, c, r)
        tailB = lastPutWritesP99
        a = await once(options.ours, c, r)
        tailA = lastPutWritesP99
      }
      if (r > 0) {
        ours[i]!.push(a)
        theirs[i]!.push(b)
        if (c.kind === "writes") {
          tails[i]!.ours.push(tailA)
          tails[i]!.theirs.push(tailB)
        }
      }
      line.push(`${label(c)} ${a.toFixed(c.kind === "graph" ? 1 : 0)}/${b.toFixed(c.kind === "graph" ? 1 : 0)} (${(a / b).toFixed(2)})`)
    }
    console.log(`${r === 0 ? "warm-up" : `round ${r}`} (ours/theirs ${cases.some((c) => c.kind === "graph") ? "ops/s, graph runs/s" : "ops/s"}): ${line.join(", ")}`)
  }
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i]!
    const a = median(ours[i]!)
    const b = median(theirs[i]!)
    const unit = c.kind === "graph" ? "runs/s" : c.kind === "writes" ? "steps/s" : "ops/s"
    console.log(`${label(c)}: ${options.ours.label} ${a.toFixed(1)} ${unit}, ${options.theirs.label} ${b.toFixed(1)} ${unit}, ratio ${(a / b).toFixed(2)}`)
    if (c.kind === "writes") {
      const [ta, tb] = [median(tails[i]!.ours), median(tails[i]!.theirs)]
      console.log(`${label(c)}: putWrites p99 ${options.ours.label} ${ta.toFixed(2)} ms, ${options.theirs.label} ${tb.toFixed(2)} ms, ours/theirs ${(ta / tb).toFixed(2)}`)
    }
  }
  console.log(`load after: ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
  const main = Math.max(0, cases.findIndex((c) => c.kind === "realistic" && c.concurrency === 1))
  console.log(`ratio: ${(median(ours[main]!) / median(theirs[main]!)).toFixed(2)}`)
}
