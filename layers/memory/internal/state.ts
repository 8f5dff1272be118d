/**
 * The memory stores' way to the rows behind the opaque `MemoryState`.
 */
import type { Effect } from "effect"
import * as MemoryState from "../MemoryState.ts"
import type { MemoryRows } from "./rows.ts"

/** The rows a `MemoryState` holds. */
export const rowsOf = (state: MemoryState.Rows): MemoryRows => state as unknown as MemoryRows

/** A value made from the shared rows, when the `MemoryState` is provided. */
export const use = <A>(f: (rows: MemoryRows) => A): Effect.Effect<A, never, MemoryState.MemoryState> =>
  MemoryState.MemoryState.useSync((state) => f(rowsOf(state)))
