/**
 * The live output of one pass: the graph runs through LangGraph's `stream`
 * (modes `values`, `updates`, `custom`, `messages`, and `checkpoints` to know
 * which step an event belongs to) instead of `invoke`, and every chunk is
 * appended to the `EventStore` under the pass's lease.
 *
 * Keys: each event gets a key from the checkpoint its step started from, its
 * mode and its rank among that step's events of the mode — the same on every
 * holder, so a step run again after a takeover streams the keys the dead
 * holder streamed already, and the store appends only those it lacks. A
 * `values` chunk is held until the checkpoint that follows it (LangGraph
 * sends the state, then the checkpoint of it), and keyed by that checkpoint:
 * the state a continuing pass sends first is the one the last pass sent last.
 *
 * Appends run on a fiber of the pass, one at a time, each taking every event
 * queued meanwhile (a step never waits for its events; a step's update and
 * its state go in one append, custom events and tokens at once); `close` waits until
 * all are appended before the pass ends and its lease goes. A refused append
 * means the lease was lost: the holder stops, as on any refused fenced write.
 *
 * @since 0.1.0
 */
import { isInterrupted } from "@langchain/langgraph"
import { createHash } from "node:crypto"
import { Context, Duration, Effect, Fiber, Option, Schedule } from "effect"
import { isTransientKind, LeaseLostError } from "../../../stores/Errors.ts"
import { type EventInput, type EventMode, EventStore, type EventStoreShape } from "../../../stores/EventStore.ts"
import { EventWakeups, type EventWakeupsShape } from "../../../stores/EventWakeups.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"

/** The modes a pass streams. */
const streamModes = ["values", "updates", "custom", "messages", "checkpoints"] as const

/** An event's data above this many bytes of JSON is replaced by a note of its size. */
const maxDataBytes = 256 * 1024

/** At most this many events go in one append. */
const maxBatch = 500

/**
 * What the executor's pass uses of it.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventWriter {
  /** LangGraph's `invoke(input, options)`, run as a stream whose chunks are appended; answers what `invoke` would. */
  readonly invoke: (graph: StreamingGraph, input: unknown, options: Record<string, unknown>) => Promise<unknown>
  /** Queues a status event (Running, Paused, Finished, Failed, Cancelled). */
  readonly status: (status: string, detail?: Record<string, unknown>) => void
  /** Waits until every queued event was appended (or given up), then stops the writer. */
  readonly close: Effect.Effect<void>
  /** Stops the writer at once (an interrupted pass: what it did not append, the next holder streams again). */
  readonly abandon: Effect.Effect<void>
}

/**
 * The part of a compiled graph the writer streams.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamingGraph {
  readonly outputChannels: unknown
  readonly stream: (input: unknown, options: any) => Promise<AsyncIterable<unknown>>
}

/** JSON of a value, or a note when it is not JSON or too big (the stream must not stop a pass). */
export const storableData = (value: unknown): unknown => {
  try {
    const text = JSON.stringify(value ?? null)
    if (text === undefined) return null
    if (text.length > maxDataBytes) return { truncated: true, bytes: text.length }
    return JSON.parse(text)
  } catch (e) {
    return { unserializable: e instanceof Error ? e.message : String(e) }
  }
}

/** A message chunk (LangChain's) as a reader wants it: its id, type, content and tool-call chunks. */
const messageData = (payload: unknown): unknown => {
  const [message, metadata] = Array.isArray(payload) ? payload : [payload, undefined]
  const m = (message ?? {}) as Record<string, unknown> & { _getType?: () => string; getType?: () => string }
  const type = typeof m.getType === "function" ? m.getType() : typeof m._getType === "function" ? m._getType() : m.type
  const node = (metadata as { langgraph_node?: unknown } | undefined)?.langgraph_node
  return storableData({
    id: m.id ?? null,
    type: type ?? null,
    content: m.content ?? null,
    ...(Array.isArray(m.tool_call_chunks) && m.tool_call_chunks.length > 0 ? { toolCallChunks: m.tool_call_chunks } : {}),
    node: typeof node === "string" ? node : null
  })
}

const interruptIds = (payload: unknown): string =>
  ((payload as { __interrupt__?: ReadonlyArray<{ id?: string }> }).__interrupt__ ?? []).map((i) => i.id ?? "").join(",")

/**
 * The writer of a pass when the instance has an `EventStore`, else undefined (the graph is invoked as before).
 *
 * @category constructors
 * @since 0.1.0
 */
export const forPass = (services: Context.Context<any>, options: Omit<Parameters<typeof start>[0], "store" | "wakeups">) =>
  Effect.gen(function*() {
    const store = Context.getOption(services, EventStore)
    if (Option.isNone(store)) return undefined
    const wakeups = Context.getOption(services, EventWakeups)
    return yield* start({ ...options, store: store.value, wakeups: Option.isSome(wakeups) ? wakeups.value : yield* EventWakeups })
  })

/**
 * Starts the writer of one pass (a fiber of the calling fiber: it ends with
 * the pass at the latest).
 *
 * @category constructors
 * @since 0.1.0
 */
export const start = Effect.fnUntraced(function*(options: {
  readonly store: EventStoreShape
  readonly wakeups: EventWakeupsShape
  readonly holder: LeaseHolder
  readonly record: ExecutionRecord
  readonly instanceId: string
  readonly now: () => number
}) {
  const { holder, instanceId, now, record, store, wakeups } = options
  const buffer: Array<EventInput> = []
  let writing = false
  let stopped = false
  let wake: (() => void) | undefined
  const idle = new Set<() => void>()
  const settle = () => {
    if (buffer.length > 0 || writing) return
    for (const f of [...idle]) f()
    idle.clear()
  }
  /**
   * Queues an event; `now` wakes the writer at once (a custom event, a token, a
   * step's state at its checkpoint, a status). A step's update waits for its
   * state, a moment later: one append a step.
   */
  const push = (key: string, mode: EventMode, data: unknown, now_ = true) => {
    if (stopped) return
    buffer.push({ key, executionId: record.executionId, mode, data, at: now(), instanceId })
    if (now_) wake?.()
  }
  /** One batch appended, retried on a transient store error on the Clock; a refusal stops the writer and the holder. */
  const append = (batch: ReadonlyArray<EventInput>) =>
    store.append(holder.lease, record.threadId, batch, now()).pipe(
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(50)),
        times: 6,
        while: (e) => e._tag === "StoreError" && isTransientKind(e.kind)
      }),
      Effect.tap(() => Effect.sync(() => wakeups.appended(record.tenantId, record.threadId))),
      Effect.catch((e) =>
        Effect.suspend(() => {
          if (e instanceof LeaseLostError) {
            stopped = true
            buffer.length = 0
            holder.fence.lost(e)
            return Effect.void
          }
          return Effect.logWarning(`live output: ${batch.length} events of ${record.executionId} were not appended: ${e.message}`)
        })
      )
    )
  const loop = Effect.gen(function*() {
    while (true) {
      if (buffer.length === 0) {
        settle()
        yield* Effect.callback<void>((resume) => {
          wake = () => {
            wake = undefined
            resume(Effect.void)
          }
          if (buffer.length > 0) wake()
          return Effect.sync(() => {
            wake = undefined
          })
        })
        continue
      }
      writing = true
      const batch = buffer.splice(0, maxBatch)
      yield* append(batch)
      writing = false
    }
  })
  const fiber = yield* Effect.forkChild(loop)

  // Keys (see the module's doc): the checkpoint the current step started from, ranks per mode under it.
  let parent = "start"
  let heldValues: { readonly value: unknown } | undefined
  const ranks = new Map<string, number>()
  const rank = (mode: string) => {
    const k = `${parent}\u0000${mode}`
    const n = (ranks.get(k) ?? 0) + 1
    ranks.set(k, n)
    return n
  }
  const feed = (mode: string, payload: unknown) => {
    switch (mode) {
      case "checkpoints": {
        const id = (payload as { config?: { configurable?: { checkpoint_id?: unknown } } })?.config?.configurable?.checkpoint_id
        if (typeof id !== "string") return
        if (heldValues !== undefined) push(`v:${id}`, "values", storableData(heldValues.value))
        heldValues = undefined
        parent = id
        return
      }
      case "values":
        if (isInterrupted(payload)) push(`iv:${parent}:${interruptIds(payload)}`, "values", storableData(payload))
        else heldValues = { value: payload }
        return
      case "updates":
        if (payload !== null && typeof payload === "object" && "__interrupt__" in payload) {
          push(`iu:${parent}:${interruptIds(payload)}`, "updates", storableData(payload))
        } else push(`u:${parent}:${rank("u")}`, "updates", storableData(payload), false)
        return
      case "custom":
        push(`c:${parent}:${rank("c")}`, "custom", storableData(payload))
        return
      case "messages":
        push(`m:${parent}:${rank("m")}`, "messages", messageData(payload))
        return
    }
  }

  const passKey = createHash("sha256").update(`${record.executionId}\u0000${holder.lease.holder}\u0000${holder.lease.epoch}`).digest("base64url").slice(0, 22)
  let statuses = 0

  const writer: EventWriter = {
    invoke: async (graph, input, invokeOptions) => {
      const stream = await graph.stream(input, {
        ...invokeOptions,
        outputKeys: graph.outputChannels,
        streamMode: [...streamModes],
        encoding: undefined
      })
      // What `invoke` answers: the last state, with the interrupts of the run (see LangGraph's `invoke`).
      const interrupts: Array<unknown> = []
      let latest: unknown
      for await (const chunk of stream) {
        const [mode, payload] = chunk as [string, unknown]
        if (mode === "values") {
          if (isInterrupted(payload)) interrupts.push(...(payload as { __interrupt__: ReadonlyArray<unknown> }).__interrupt__)
          else latest = payload
        }
        feed(mode, payload)
      }
      if (heldValues !== undefined) push(`v:end:${parent}`, "values", storableData(heldValues.value))
      heldValues = undefined
      wake?.()
      if (interrupts.length === 0) return latest
      if (latest == null) return { __interrupt__: interrupts }
      return typeof latest === "object" ? { ...latest, __interrupt__: interrupts } : latest
    },
    status: (status, detail) => push(`s:${passKey}:${++statuses}`, "status", storableData({ status, ...detail })),
    close: Effect.callback<void>((resume) => {
      const done = () => resume(Effect.void)
      idle.add(done)
      wake?.()
      settle()
      return Effect.sync(() => {
        idle.delete(done)
      })
    }).pipe(
      Effect.timeout(Duration.seconds(10)),
      Effect.catch(() => Effect.logWarning(`live output: events of ${record.executionId} still unwritten when its pass ended`)),
      Effect.ensuring(Fiber.interrupt(fiber))
    ),
    abandon: Fiber.interrupt(fiber)
  }
  return writer
})
