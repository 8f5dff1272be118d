/**
 * LangGraph's own checkpointer conformance suite, on baton's saver over
 * Postgres (`SqlCheckpointStore`'s rows on a schema of this run). Every
 * checkpointer the suite asks for starts on empty tables: the suite's
 * describes run one after another, and each creation clears the rows.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import { testSchema, url } from "./db.ts"
import { type OpenRows, openRows } from "./saver.ts"

const schema = testSchema("validation")
let opened: OpenRows | undefined

validate({
  checkpointerName: "baton postgres",
  beforeAll: async () => {
    opened = await openRows({ url, schema, maxConnections: 4 })
  },
  afterAll: async () => {
    await opened?.close()
  },
  createCheckpointer: async () => {
    await opened!.clear()
    return new BatonCheckpointSaver(opened!.rows)
  }
})
