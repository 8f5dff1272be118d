/**
 * LangGraph's own checkpointer conformance suite, on baton's saver over the
 * Redis example's `CheckpointRows`. Every checkpointer the suite asks for gets
 * a fresh key prefix (so it starts empty); the run's keys go at the end.
 */
import { validate } from "@langchain/langgraph-checkpoint-validation"
import { ManagedRuntime } from "effect"
import * as RedisCheckpointStore from "../../examples/redis-store/RedisCheckpointStore.ts"
import { makeKeys } from "../../examples/redis-store/RedisKeys.ts"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import * as RedisStores from "../../examples/redis-store/RedisStores.ts"
import { connection, runPrefix } from "./redis.ts"

const prefix = runPrefix("validation")
const runtime = ManagedRuntime.make(connection())
let made = 0

validate({
  checkpointerName: "baton redis",
  afterAll: async () => {
    await runtime.runPromise(RedisStores.deleteAll(prefix))
    await runtime.dispose()
  },
  createCheckpointer: async () =>
    new BatonCheckpointSaver(await runtime.runPromise(RedisCheckpointStore.makeRows(makeKeys({ prefix: `${prefix}${++made}:` }))))
})
