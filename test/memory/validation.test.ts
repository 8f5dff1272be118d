/**
 * LangGraph's own checkpointer conformance suite, on the in-memory saver.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation"
import { makeRows } from "../../layers/memory/MemoryCheckpointStore.ts"
import { emptyRows } from "../../layers/memory/MemoryState.ts"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"

validate({
  checkpointerName: "baton memory",
  createCheckpointer: () => new BatonCheckpointSaver(makeRows(emptyRows()))
})
