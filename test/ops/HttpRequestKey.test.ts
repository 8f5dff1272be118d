/**
 * BatonHttp passes a body's `requestKey` to `start` and `resume`: a client
 * retrying a POST (a timeout, a dropped connection) starts or answers once,
 * and the same key for another request is 409 RequestConflictError. The
 * runtime runs on the TestClock over the memory stores (which hold a
 * RequestStore).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"
import { post, tenantHeader } from "./httpCalls.ts"

const review = approval(makeSideEffects())
const authorize = tenantHeader

describe("BatonHttp and request keys", () => {
  it.effect("a start or a resume sent twice with one requestKey happens once; the key for another request is 409", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const baton = yield* Baton.Baton
      const body = { workflow: review.name, input: { log: [] }, requestKey: "order-1" }
      const [first, again] = [yield* post(port, "/executions", body), yield* post(port, "/executions", body)]
      assert.deepStrictEqual([first.status, again.status], [202, 202])
      assert.strictEqual(again.body.executionId, first.body.executionId, "the retry follows the first start")
      const other = yield* post(port, "/executions", { ...body, input: { log: ["other"] } })
      assert.deepStrictEqual([other.status, other.body.error], [409, "RequestConflictError"])
      assert.strictEqual((yield* baton.list({ tenantId: "acme" })).executions.length, 1)

      const rested = yield* baton.await(first.body.executionId, { tenantId: "acme" })
      assert.strictEqual(rested._tag, "Paused")
      const pauseId = rested._tag === "Paused" ? rested.pauses[0]!.pauseId : ""
      const answer = { decision: "yes", requestKey: "approve-1" }
      const resumed = yield* post(port, `/pauses/${pauseId}/resume`, answer)
      const resumedAgain = yield* post(port, `/pauses/${pauseId}/resume`, answer)
      assert.deepStrictEqual([resumed.status, resumed.body._tag], [200, "Finished"])
      assert.deepStrictEqual([resumedAgain.status, resumedAgain.body._tag], [200, "Finished"], "a keyed retry is not NotPausedError")
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [review], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [review] })),
        Layer.provide(MemoryStores.layer)
      )
    )))
})
