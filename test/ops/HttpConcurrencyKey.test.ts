/**
 * BatonHttp passes a body's `concurrencyKey` to `start`: a second POST of a
 * key with limit 1 answers 202 with its handle while the first runs, its
 * execution waits (Paused, no pause) and runs once the first ended; a bad
 * limit or key is 400 InvalidInputError naming the field, nothing written.
 * Two POSTs with one `debounce` key answer one handle; a zero window is 400,
 * and so is a `maxWait` shorter than the window (it reaches the start).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { asking } from "../runtime/keyed/fixtures.ts"
import { post, tenantHeader } from "./httpCalls.ts"

const authorize = tenantHeader

describe("BatonHttp and concurrency keys", () => {
  it.effect("a start over its key's limit is 202 and waits for the slot; a bad limit or key is 400 naming the field", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const baton = yield* Baton.Baton
      const body = (n: number) => ({ workflow: asking.name, input: { n }, concurrencyKey: { key: "acct-7", limit: 1 } })
      const first = yield* post(port, "/executions", body(1))
      const second = yield* post(port, "/executions", body(2))
      assert.deepStrictEqual([first.status, second.status], [202, 202])
      const rested = yield* baton.await(first.body.executionId, { tenantId: "acme" })
      assert.strictEqual(rested._tag, "Paused", "the first holds the slot at its pause")
      const waiting = yield* baton.status(second.body.executionId, { tenantId: "acme" })
      assert.deepStrictEqual([waiting.status, waiting.holder], ["Paused", null])
      assert.deepStrictEqual(yield* baton.pendingPauses({ tenantId: "acme", threadId: second.body.threadId }), [])
      yield* baton.cancel(first.body.threadId, { tenantId: "acme" })
      const next = yield* baton.await(second.body.executionId, { tenantId: "acme" })
      assert.strictEqual(next._tag === "Paused" && next.pauses.length, 1, "admitted once the first ended, run to its own pause")
      for (const [concurrencyKey, field] of [[{ key: "acct-7", limit: 0 }, "concurrencyKey.limit"], [{ key: "", limit: 2 }, "concurrencyKey.key"]] as const) {
        const bad = yield* post(port, "/executions", { ...body(3), concurrencyKey })
        assert.deepStrictEqual([bad.status, bad.body.error], [400, "InvalidInputError"])
        assert.include(bad.body.message, field)
      }
      assert.strictEqual((yield* baton.list({ tenantId: "acme" })).executions.length, 2, "nothing written by the bad ones")
      const debounced = (n: number) => ({ workflow: asking.name, input: { n }, debounce: { key: "sync-7", window: "5 seconds" } })
      const [d1, d2] = [yield* post(port, "/executions", debounced(1)), yield* post(port, "/executions", debounced(2))]
      assert.deepStrictEqual([d1.status, d2.status], [202, 202])
      assert.strictEqual(d2.body.executionId, d1.body.executionId, "a burst is one execution")
      const badWindow = yield* post(port, "/executions", { ...debounced(3), debounce: { key: "sync-8", window: 0 } })
      assert.deepStrictEqual([badWindow.status, badWindow.body.error], [400, "InvalidInputError"])
      assert.include(badWindow.body.message, "debounce.window")
      // maxWait goes through to the start: one shorter than the window is refused naming it.
      const badWait = yield* post(port, "/executions", { ...debounced(4), debounce: { key: "sync-9", window: "5 seconds", maxWait: "1 second" } })
      assert.deepStrictEqual([badWait.status, badWait.body.error], [400, "InvalidInputError"])
      assert.include(badWait.body.message, "debounce.maxWait")
      const capped = yield* post(port, "/executions", { ...debounced(5), debounce: { key: "sync-10", window: "5 seconds", maxWait: "1 minute" } })
      assert.strictEqual(capped.status, 202)
      const wait = (yield* baton.status(capped.body.executionId, { tenantId: "acme" })).keyedWait
      assert.deepStrictEqual(wait?._tag === "Debounce" && wait.key, "sync-10")
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [asking], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [asking] })),
        Layer.provide(MemoryStores.layer)
      )
    )))
})
