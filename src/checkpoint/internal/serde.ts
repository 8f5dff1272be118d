/**
 * An exact fast path for reading what LangGraph's default serializer wrote.
 *
 * `JsonPlusSerializer.loadsTyped("json", …)` parses the text and then walks
 * every value with an async reviver that rebuilds each object and array and
 * turns LangChain's `"lc"` records (messages, `undefined`, Set, Map, …) back
 * into objects. For text with no `"lc"` key the reviver only copies what
 * `JSON.parse` built — unless a key is `__proto__` (the copy assigns it as a
 * prototype, `JSON.parse` keeps it as an own key). So text that contains
 * neither `"lc"` nor `"__proto__"` nor a `\u` escape (which could spell either)
 * is read with `JSON.parse` alone: the same value, without the walk. Anything
 * else, and any other serializer, goes through the serializer.
 *
 * @since 0.1.0
 */
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint"

const decoder = new TextDecoder()

/** True when `JSON.parse(text)` equals what the default serializer's reviver answers for it. */
export const parsesPlain = (text: string): boolean =>
  !text.includes("\"lc\"") && !text.includes("\\u") && !text.includes("\"__proto__\"")

/** True for LangGraph's default serializer itself (not a subclass, which may read differently). */
export const isDefaultSerde = (serde: SerializerProtocol): boolean => Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype

/** `serde.loadsTyped(type, data)`, with the fast path above when `plain` (the serde is the default one). */
export const loadsTyped = (serde: SerializerProtocol, plain: boolean, type: string, data: Uint8Array | string): unknown => {
  if (plain && type === "json") {
    const text = typeof data === "string" ? data : decoder.decode(data)
    if (parsesPlain(text)) return JSON.parse(text)
    return serde.loadsTyped(type, text)
  }
  return serde.loadsTyped(type, data)
}
