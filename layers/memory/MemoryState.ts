/**
 * The rows every in-memory store reads and writes. Built once and shared:
 * every instance given the same built context sees the same rows, the way
 * instances share a database. What the rows hold is the stores' own: read
 * and write them through the stores.
 *
 * @since 0.1.0
 */
import type { Brand } from "effect"
import { Context, Layer } from "effect"
import { emptyRows } from "./internal/rows.ts"

/**
 * The shared rows, opaque: only the memory stores read them.
 *
 * @category models
 * @since 0.1.0
 */
export type Rows = Brand.Brand<"baton/memory/MemoryState/Rows">

/**
 * The service holding the rows every in-memory store reads and writes; {@link layer} makes a fresh, empty set.
 *
 * @category services
 * @since 0.1.0
 */
export class MemoryState extends Context.Service<MemoryState, Rows>()("baton/memory/MemoryState") {}

/**
 * A fresh, empty set of rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<MemoryState> = Layer.sync(MemoryState, () => emptyRows() as unknown as Rows)
