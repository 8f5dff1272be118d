/**
 * The saver's exact read path for LangGraph's default serializer
 * (src/checkpoint/internal/serde.ts) against the serializer itself: for
 * seeded random values — LangChain messages of every class with random
 * kwargs, nested in plain data, next to Sets, Maps, `undefined`, keys named
 * `lc`, `__proto__` and `__lc_escaped__`, escapes, deep nesting — the value
 * read is the serializer's own, class by class and key by key; the message
 * path is taken where it should be (the serializer is not asked) and not
 * where it should not.
 */
import {
  AIMessage,
  AIMessageChunk,
  type BaseMessage,
  ChatMessage,
  FunctionMessage,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import { type Checkpoint, emptyCheckpoint, JsonPlusSerializer } from "@langchain/langgraph-checkpoint"
import { isDeepStrictEqual } from "node:util"
import { assert, describe, it } from "vitest"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import { loadsTyped } from "../../src/checkpoint/internal/serde.ts"
import * as MemoryCheckpointStore from "../../layers/memory/MemoryCheckpointStore.ts"
import { Effect } from "effect"
import * as MemoryState from "../../layers/memory/MemoryState.ts"

/** The default serializer, counting the reads it is asked for (its prototype stays the default one). */
const countingSerde = () => {
  const serde = new JsonPlusSerializer()
  const inner = serde.loadsTyped.bind(serde)
  const asked = { count: 0 }
  serde.loadsTyped = (type: string, data: Uint8Array | string) => {
    asked.count++
    return inner(type, data)
  }
  return { serde, asked }
}

/** A small seeded generator (mulberry32). */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

type Rand = () => number
const pick = <A>(r: Rand, xs: ReadonlyArray<A>): A => xs[Math.floor(r() * xs.length)]!
const strings = ["", "hello", "tool_call", "a\"b", "line\nbreak", "é ü 😀", "\u0000nul", "snake_case_key", "lc", "__proto__x", "\\u006c"]

/** Plain JSON data (no `lc` key): what a message's kwargs or a channel hold. */
const plain = (r: Rand, depth: number): unknown => {
  const k = depth > 3 ? Math.floor(r() * 4) : Math.floor(r() * 7)
  switch (k) {
    case 0:
      return pick(r, strings)
    case 1:
      return pick(r, [0, 1, -1, 1.5, 1e21, 2 ** 53, -3.25e-7])
    case 2:
      return pick(r, [true, false, null])
    case 3:
      return pick(r, ["x", 42])
    case 4:
      return Array.from({ length: Math.floor(r() * 4) }, () => plain(r, depth + 1))
    default: {
      const out: Record<string, unknown> = {}
      for (let i = Math.floor(r() * 4); i > 0; i--) out[pick(r, ["a", "tool_calls", "snake_key", "camelKey", "1", "type", "id", "kwargs", "constructor", "toString", "Some-Key x"])] = plain(r, depth + 1)
      return out
    }
  }
}

const contents = (r: Rand) =>
  r() < 0.7 ? pick(r, strings) : [{ type: "text", text: pick(r, strings) }, { type: "image_url", image_url: { url: "data:x" } }]

/** A message of a random class with random optional fields. */
const message = (r: Rand, i: number): BaseMessage => {
  const base = {
    content: contents(r),
    ...(r() < 0.7 ? { id: `m-${i}` } : {}),
    ...(r() < 0.3 ? { name: pick(r, ["bob", "tool"]) } : {}),
    ...(r() < 0.4 ? { additional_kwargs: { extra: plain(r, 2), snake_case: plain(r, 3), ...(r() < 0.3 ? { constructor: 1, toString: "s" } : {}) } } : {}),
    ...(r() < 0.4 ? { response_metadata: { model_name: pick(r, strings), other: plain(r, 2) } } : {})
  }
  switch (Math.floor(r() * 9)) {
    case 0:
      return new HumanMessage(base)
    case 1:
      return new SystemMessage(base)
    case 2:
      return new ToolMessage({ ...base, tool_call_id: `call-${i}`, ...(r() < 0.5 ? { artifact: plain(r, 2), status: "error" as const } : {}) })
    case 3:
      return new AIMessageChunk({ ...base, content: String(base.content) })
    case 4:
      return new ChatMessage({ ...base, role: "critic" })
    case 5:
      return new FunctionMessage({ ...base, name: "fn" })
    case 6:
      return new HumanMessageChunk(base)
    case 7:
      return new RemoveMessage({ id: `rm-${i}` })
    default:
      return new AIMessage({
        ...base,
        tool_calls: r() < 0.5 ? [{ id: `c-${i}`, name: "lookup", args: plain(r, 2) as Record<string, unknown>, type: "tool_call" }] : [],
        ...(r() < 0.5 ? { usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } } : {})
      })
  }
}

/**
 * A channel value: messages in plain data (an `undefined` among them
 * sometimes, which the message path reads too); with `withOthers`, also
 * something only the serializer reads.
 */
const channelValue = (r: Rand, withOthers: boolean): unknown => {
  const messages = Array.from({ length: 1 + Math.floor(r() * 6) }, (_, i) => message(r, i))
  const value: Record<string, unknown> = { messages, meta: plain(r, 1), nested: [{ deeper: [messages[0]] }] }
  if (r() < 0.2) value.missing = [undefined, { gone: undefined }]
  if (withOthers) {
    switch (Math.floor(r() * 6)) {
      case 0:
        value.set = new Set([1, "a"])
        break
      case 1:
        value.map = new Map([["k", { v: 1 }]])
        break
      case 2:
        value.missing = { lc: 2, type: "undefined", more: 1 }
        break
      case 3:
        value.data = { lc: 1, type: "constructor", id: ["not", "a", "class"] }
        break
      case 4:
        messages.push(new AIMessage({ content: "x", additional_kwargs: { inner: { lc: 7 } } }))
        break
      default:
        value.err = new Error("boom")
    }
  }
  return value
}

/** Equal as values and class by class (every object's prototype), own keys in order. */
const sameShape = (a: unknown, b: unknown, path = "$"): string | undefined => {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) {
    return Object.is(a, b) ? undefined : `${path}: ${String(a)} vs ${String(b)}`
  }
  const [pa, pb] = [Object.getPrototypeOf(a), Object.getPrototypeOf(b)]
  if (pa !== pb) {
    // A parsed `__proto__` key becomes a fresh prototype object in each read: equal as values, never the same object.
    const fresh = (p: unknown) => p !== null && Object.getPrototypeOf(p) === Object.prototype && !Object.hasOwn(p as object, "constructor")
    if (!fresh(pa) || !fresh(pb)) return `${path}: prototypes differ`
    const diff = sameShape(pa, pb, `${path}.[[Prototype]]`)
    if (diff !== undefined) return diff
  }
  const ka = Reflect.ownKeys(a)
  const kb = Reflect.ownKeys(b)
  if (!isDeepStrictEqual(ka, kb)) return `${path}: keys ${String(ka)} vs ${String(kb)}`
  for (const k of ka) {
    const da = Object.getOwnPropertyDescriptor(a, k)!
    const db = Object.getOwnPropertyDescriptor(b, k)!
    if (da.enumerable !== db.enumerable) return `${path}.${String(k)}: enumerable differs`
    const diff = sameShape(da.value ?? da.get, db.value ?? db.get, `${path}.${String(k)}`)
    if (diff !== undefined) return diff
  }
  return undefined
}

const check = async (serde: JsonPlusSerializer, text: string) => {
  const expected = await new JsonPlusSerializer().loadsTyped("json", text)
  const read = await loadsTyped(serde, true, "json", new TextEncoder().encode(text))
  const diff = sameShape(read, expected)
  assert.isUndefined(diff, `${diff} for ${text.slice(0, 300)}`)
  if (isDeepStrictEqual(read, expected) === false) assert.fail(`not deep-equal for ${text.slice(0, 300)}`)
}

describe("the exact read path of the default serializer", () => {
  it("reads messages in plain data as the serializer does, without asking it (500 seeded values)", async () => {
    const { asked, serde } = countingSerde()
    await loadsTyped(serde, true, "json", JSON.stringify({ lc: 1, type: "constructor", id: ["langchain_core", "messages", "HumanMessage"], kwargs: { content: "warm" } }))
    asked.count = 0
    for (let seed = 1; seed <= 500; seed++) {
      const [type, bytes] = await serde.dumpsTyped(channelValue(random(seed), false))
      assert.strictEqual(type, "json")
      await check(serde, new TextDecoder().decode(bytes))
    }
    assert.strictEqual(asked.count, 0, "every value took the message path")
  })

  it("leaves the rest to the serializer and still reads what it reads (500 seeded values)", async () => {
    const { asked, serde } = countingSerde()
    for (let seed = 1; seed <= 500; seed++) {
      const [, bytes] = await serde.dumpsTyped(channelValue(random(seed), true))
      await check(serde, new TextDecoder().decode(bytes))
    }
    assert.strictEqual(asked.count, 500, "each value was read by the serializer")
  })

  it("is exact on text no serializer of ours wrote: -0, overflowing numbers, escapes, __proto__, deep nesting, unknown classes", async () => {
    const { serde } = countingSerde()
    const msg = (name: string, kwargs: string) => `{"lc":1,"type":"constructor","id":["langchain_core","messages","${name}"],"kwargs":${kwargs}}`
    let deep = "\"end\""
    for (let i = 0; i < 60; i++) deep = `[${deep}]`
    const texts = [
      `[${msg("AIMessage", `{"content":"x","additional_kwargs":{"n":-0,"big":1e999,"arr":[-0.0]}}`)}, -0, 1e999]`,
      `{"m":${msg("AIMessage", `{"content":"\\u006c\\u0063 \\ud800","additional_kwargs":{"\\u006cc":1}}`)}}`,
      `{"m":${msg("AIMessage", `{"content":"x","additional_kwargs":{"__proto__":{"polluted":true}}}`)}}`,
      `{"__proto__":{"polluted":true},"m":${msg("HumanMessage", `{"content":"x"}`)}}`,
      `{"m":${msg("HumanMessage", `{"content":"x","additional_kwargs":{"e":{"__lc_escaped__":{"lc":1}}}}`)}}`,
      `{"m":${msg("AIMessage", `{"content":"x","additional_kwargs":{"d":${deep}}}`)}}`,
      `{"m":${msg("NotAMessage", `{"content":"x"}`)}}`,
      `{"m":${msg("isBaseMessage", `{"content":"x"}`)}}`,
      `{"m":{"lc":1,"type":"constructor","id":["langchain_core","messages","ai","AIMessage"],"kwargs":{"content":"x"}}}`,
      `{"m":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"x"},"extra":1}}`,
      `{"m":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"]}}`,
      `{"m":${msg("ToolMessage", `{"content":"x","tool_call_id":"c","Some-Key with space":1,"  padded_key ":2}`)}}`,
      `{"m":${msg("AIMessage", `{"content":"x","constructor":1,"toString":"t","hasOwnProperty":2}`)}}`,
      `{"lc":2,"type":"undefined"}`,
      // A plain value shaped like a message record whose kwargs is undefined: the serializer's text has no kwargs, no message.
      `{"m":{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"lc":2,"type":"undefined"}}}`,
      `[{"lc":1,"type":"constructor","id":["langchain_core","messages","RemoveMessage"],"kwargs":{"lc":2,"type":"undefined"}}]`,
      `${msg("SystemMessage", `{"content":[{"type":"text","text":"hi"}],"response_metadata":{"a_b":{"c_d":1}}}`)}`
    ]
    for (const text of texts) {
      const expected = await new JsonPlusSerializer().loadsTyped("json", text).then((v) => ({ v }), (e: Error) => ({ e: e.message }))
      const read = await Promise.resolve(loadsTyped(serde, true, "json", text)).then((v) => ({ v }), (e: Error) => ({ e: e.message }))
      const diff = sameShape(read, expected)
      assert.isUndefined(diff, `${diff} for ${text.slice(0, 200)}`)
    }
    assert.isUndefined((Object.prototype as any).polluted)
  })
})

describe("a checkpoint read through the saver", () => {
  it("lists its channel values in the checkpoint's channel order, however each value is read", async () => {
    const saver = new BatonCheckpointSaver(Effect.runSync(Effect.provide(MemoryCheckpointStore.makeRows, MemoryState.layer)))
    // Read by the serializer (a Set), by the message path, and by JSON.parse alone — in that order of channels.
    const values: Record<string, unknown> = { tags: new Set(["a"]), messages: [new HumanMessage({ content: "hi", id: "h" })], count: 3 }
    const versions = { tags: 1, messages: 1, count: 1 }
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), channel_values: values, channel_versions: versions }
    await saver.put({ configurable: { thread_id: "order", checkpoint_ns: "" } }, checkpoint, { source: "input", step: -1, parents: {} }, versions)
    for (let read = 0; read < 3; read++) {
      const tuple = await saver.getTuple({ configurable: { thread_id: "order" } })
      assert.deepStrictEqual(Object.keys(tuple!.checkpoint.channel_values), ["tags", "messages", "count"])
      assert.deepStrictEqual(tuple!.checkpoint.channel_values.tags, new Set(["a"]))
    }
  })
})
