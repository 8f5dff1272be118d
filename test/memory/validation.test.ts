/**
 * LangGraph's own checkpointer conformance suite, on the in-memory saver.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation"
import * as MemoryCheckpointStore from "../../layers/memory/MemoryCheckpointStore.ts"
import { Effect } from "effect"
import * as MemoryState from "../../layers/memory/MemoryState.ts"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"

validate({
  checkpointerName: "baton memory",
  createCheckpointer: () => new BatonCheckpointSaver(Effect.runSync(Effect.provide(MemoryCheckpointStore.makeRows, MemoryState.layer)))
})
