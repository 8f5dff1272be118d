/**
 * LangGraph's own checkpointer conformance suite, on baton's saver over a
 * SQLite file (`SqlCheckpointStore`'s rows).
 */
import { validate } from "@langchain/langgraph-checkpoint-validation"
import * as Path from "node:path"
import type { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import { type OpenSaver, openSaver } from "./saver.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("validation")
const open = new Map<BatonCheckpointSaver, OpenSaver>()
let n = 0

validate({
  checkpointerName: "baton sqlite",
  createCheckpointer: async () => {
    const opened = await openSaver({ path: Path.join(dir, `validation-${++n}.db`) })
    open.set(opened.saver, opened)
    return opened.saver
  },
  destroyCheckpointer: async (saver) => {
    await open.get(saver)?.close()
    open.delete(saver)
  }
})
