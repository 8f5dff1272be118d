/**
 * An exact fast path for reading what LangGraph's default serializer wrote.
 *
 * `JsonPlusSerializer.loadsTyped("json", …)` parses the text and then walks
 * every value with an async reviver that rebuilds each object and array and
 * turns LangChain's `"lc"` records (messages, `undefined`, Set, Map, …) back
 * into objects; a message record is turned into text again and handed to
 * `@langchain/core`'s `load`, which parses it and walks it once more, then
 * builds the message. That is most of the CPU a checkpoint read costs.
 *
 * Two exact shortcuts:
 * - text with no `"lc"` key: the reviver only copies what `JSON.parse`
 *   built — unless a key is `__proto__` (the copy assigns it as a prototype,
 *   `JSON.parse` keeps it as an own key). So text that contains neither
 *   `"lc"` nor `"__proto__"` nor a `\u` escape (which could spell either) is
 *   read with `JSON.parse` alone;
 * - text whose only `"lc"` records are LangChain messages (`id`
 *   `["langchain_core", "messages", <class>]`, a class `load` resolves to the
 *   same constructor this module imports: checked once per process by asking
 *   the serializer itself) with plain data inside: parsed once and walked
 *   once, synchronously, each message built as `load` builds it (its kwargs'
 *   keys mapped with the class's inverted `lc_aliases`, else camel-cased; the
 *   constructor's `name` set). The kwargs go through the same text round
 *   trip as in the serializer (`-0` becomes `0`, an overflowing number
 *   `null`, a key whose value is the serializer's `undefined` record goes,
 *   in an array it becomes `null`); outside messages that record is
 *   `undefined`.
 *
 * Anything else — another `"lc"` record anywhere, a `__proto__` or
 * `__lc_escaped__` key inside a message, a message nested deeper than
 * `load`'s limit allows, any other serializer — goes through the serializer.
 *
 * @since 0.1.0
 */
import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  ChatMessageChunk,
  FunctionMessage,
  FunctionMessageChunk,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  SystemMessageChunk,
  ToolMessage,
  ToolMessageChunk
} from "@langchain/core/messages"
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint"

const decoder = new TextDecoder()

/** True when `JSON.parse(text)` equals what the default serializer's reviver answers for it. */
export const parsesPlain = (text: string): boolean =>
  !text.includes("\"lc\"") && !text.includes("\\u") && !text.includes("\"__proto__\"")

/** True for LangGraph's default serializer itself (not a subclass, which may read differently). */
export const isDefaultSerde = (serde: SerializerProtocol): boolean => Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype

type MessageClass = new(fields: any) => object

/** The message classes the fast path builds, each with the smallest kwargs its constructor takes (for the check). */
const messageClasses: ReadonlyArray<readonly [string, MessageClass, Record<string, unknown>]> = [
  ["AIMessage", AIMessage, { content: "" }],
  ["AIMessageChunk", AIMessageChunk, { content: "" }],
  ["HumanMessage", HumanMessage, { content: "" }],
  ["HumanMessageChunk", HumanMessageChunk, { content: "" }],
  ["SystemMessage", SystemMessage, { content: "" }],
  ["SystemMessageChunk", SystemMessageChunk, { content: "" }],
  ["ToolMessage", ToolMessage, { content: "", tool_call_id: "t" }],
  ["ToolMessageChunk", ToolMessageChunk, { content: "", tool_call_id: "t" }],
  ["FunctionMessage", FunctionMessage, { content: "", name: "f" }],
  ["FunctionMessageChunk", FunctionMessageChunk, { content: "", name: "f" }],
  ["ChatMessage", ChatMessage, { content: "", role: "r" }],
  ["ChatMessageChunk", ChatMessageChunk, { content: "", role: "r" }],
  ["RemoveMessage", RemoveMessage, { id: "r" }]
]

/** A message class the fast path may build, with `load`'s key map for it. */
interface Builder {
  readonly name: string
  readonly cls: MessageClass
  readonly keys: Readonly<Record<string, string>>
}

/** `load`'s key map for a class: every `lc_aliases` along its prototype chain, inverted. */
const invertedAliases = (cls: MessageClass): Record<string, string> => {
  const aliases: Record<string, string> = {}
  for (let current: any = cls; current && current.prototype; current = Object.getPrototypeOf(current)) {
    Object.assign(aliases, Reflect.get(current.prototype, "lc_aliases"))
  }
  const inverted: Record<string, string> = {}
  for (const [key, value] of Object.entries(aliases)) inverted[value] = key
  return inverted
}

const separators = /[-_\s]+/g

/** `load`'s camel-casing of a key with no alias. */
const camelCase = (key: string): string => {
  const trimmed = key.trim()
  if (!/[-_\s]/.test(trimmed)) return trimmed
  return trimmed.replace(separators, "_").toLowerCase().replace(/_+([a-z0-9])/g, (_, char: string) => char.toUpperCase())
}

let builders: Promise<ReadonlyMap<string, Builder>> | undefined

/**
 * The classes whose records the serializer itself builds as instances of the
 * class this module imported (one `@langchain/core` for both), asked once per
 * process; a class it builds otherwise (or fails on) is left to it.
 */
const knownBuilders = (): Promise<ReadonlyMap<string, Builder>> => {
  if (builders !== undefined) return builders
  const serde = new JsonPlusSerializer()
  builders = Promise.all(messageClasses.map(async ([name, cls, kwargs]) => {
    const text = JSON.stringify({ lc: 1, type: "constructor", id: ["langchain_core", "messages", name], kwargs })
    const built = await serde.loadsTyped("json", text).catch(() => undefined)
    return built?.constructor === cls ? { name, cls, keys: invertedAliases(cls) } : undefined
  })).then((found) => new Map(found.flatMap((b) => b === undefined ? [] : [[b.name, b] as const])))
  return builders
}

/** `load`'s depth limit counts from the message record: leave room below its 50. */
const maxDepthInMessage = 45

const unfit: unique symbol = Symbol("unfit")

/** The serializer's record of `undefined` (exactly that: a record with more keys is left to the serializer). */
const isUndefinedRecord = (record: Record<string, unknown>): boolean =>
  record.lc === 2 && record.type === "undefined" && Object.keys(record).length === 2

/** The kwargs subtree as `load` would see it after a text round trip, or `unfit` when `load` would treat any of it specially. */
const plainKwargs = (value: unknown, depth: number): unknown => {
  if (depth > maxDepthInMessage) return unfit
  if (typeof value === "number") return Object.is(value, -0) ? 0 : Number.isFinite(value) ? value : null
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = plainKwargs(value[i], depth + 1)
      if (v === unfit) return unfit
      value[i] = v === undefined ? null : v
    }
    return value
  }
  const record = value as Record<string, unknown>
  if (isUndefinedRecord(record)) return undefined
  if (Object.hasOwn(record, "lc") || Object.hasOwn(record, "__lc_escaped__") || Object.hasOwn(record, "__proto__")) return unfit
  for (const key in record) {
    const v = plainKwargs(record[key], depth + 1)
    if (v === unfit) return unfit
    // `undefined` leaves the text `load` parses: the key goes, an array keeps `null`.
    if (v === undefined) delete record[key]
    else record[key] = v
  }
  return record
}

/** The message a record stands for, built as `load` builds it, or `unfit`. */
const message = (record: Record<string, unknown>, known: ReadonlyMap<string, Builder>): unknown => {
  const { id, kwargs, lc, type } = record
  if (lc !== 1 || type !== "constructor" || Object.keys(record).length !== 4) return unfit
  if (!Array.isArray(id) || id.length !== 3 || id[0] !== "langchain_core" || id[1] !== "messages") return unfit
  const builder = typeof id[2] === "string" ? known.get(id[2]) : undefined
  if (builder === undefined || typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) return unfit
  // kwargs that are the serializer's `undefined` leave the text `load` reads: a plain object, no message.
  const plain = plainKwargs(kwargs, 1)
  if (plain === unfit || plain === undefined) return unfit
  const fields: Record<string, unknown> = {}
  for (const key in kwargs) {
    if (Object.hasOwn(kwargs, key)) fields[builder.keys[key] || camelCase(key)] = (kwargs as Record<string, unknown>)[key]
  }
  const instance = new builder.cls(fields)
  Object.defineProperty(instance.constructor, "name", { value: builder.name })
  return instance
}

/** The parsed value with its message records built (in place), or `unfit`. */
const revive = (value: unknown, known: ReadonlyMap<string, Builder>): unknown => {
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = revive(value[i], known)
      if (v === unfit) return unfit
      value[i] = v
    }
    return value
  }
  const record = value as Record<string, unknown>
  if (Object.hasOwn(record, "__proto__")) return unfit
  if (isUndefinedRecord(record)) return undefined
  if (Object.hasOwn(record, "lc")) return message(record, known)
  for (const key in record) {
    const v = revive(record[key], known)
    if (v === unfit) return unfit
    record[key] = v
  }
  return record
}

/** What the default serializer answers for `text` (which has an `"lc"` key or an escape), by the message path when it fits. */
const loadsRecords = async (serde: SerializerProtocol, text: string): Promise<unknown> => {
  const known = await knownBuilders()
  if (known.size > 0) {
    const value = revive(JSON.parse(text), known)
    if (value !== unfit) return value
  }
  return serde.loadsTyped("json", text)
}

/** `serde.loadsTyped(type, data)`, with the fast paths above when `plain` (the serde is the default one). */
export const loadsTyped = (serde: SerializerProtocol, plain: boolean, type: string, data: Uint8Array | string): unknown => {
  if (plain && type === "json") {
    const text = typeof data === "string" ? data : decoder.decode(data)
    if (parsesPlain(text)) return JSON.parse(text)
    return loadsRecords(serde, text)
  }
  return serde.loadsTyped(type, data)
}
