/**
 * BatonHttp's signal route through a real Node server on an ephemeral
 * 127.0.0.1 port: a signal wakes the waiting execution; an undeclared name
 * is 400, a payload its schema refuses 400 with the path, another tenant's
 * thread 404, a finished thread 409 — nothing written for any of them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, TimerStore } from "../../src/index.ts"
import { approver } from "../runtime/timers/timerFixtures.ts"
import { post, tenantHeader } from "./httpCalls.ts"

const wf = approver(undefined, "http-approver")

const authorize = tenantHeader

describe("BatonHttp: POST /threads/:threadId/signals/:name", () => {
  it.effect("wakes the waiting execution; typed refusals write nothing", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const baton = yield* Baton.Baton
      const handle = yield* baton.start(wf, {}, { tenantId: "acme", threadId: "th-1" })
      assert.strictEqual((yield* baton.await(handle))._tag, "Paused")
      const undeclared = yield* post(port, "/threads/th-1/signals/reject", { payload: {} })
      assert.deepStrictEqual([undeclared.status, undeclared.body.error], [400, "UnknownSignalError"])
      const bad = yield* post(port, "/threads/th-1/signals/approve", { payload: { by: 1 } })
      assert.deepStrictEqual([bad.status, bad.body.error], [400, "InvalidInputError"])
      assert.include(bad.body.message, "payload.by")
      const otherTenant = yield* post(port, "/threads/th-1/signals/approve", { payload: { by: "eve" } }, "beta")
      assert.deepStrictEqual([otherTenant.status, otherTenant.body.error], [404, "UnknownThreadError"])
      assert.deepStrictEqual(yield* TimerStore.TimerStore.use((t) => t.listSignals("acme", handle.executionId)), [], "nothing written")
      const sent = yield* post(port, "/threads/th-1/signals/approve", { payload: { by: "ann" } })
      assert.strictEqual(sent.status, 200, JSON.stringify(sent.body))
      assert.deepStrictEqual([sent.body.threadId, sent.body.name, sent.body.executionId], ["th-1", "approve", handle.executionId])
      const done = yield* baton.await(handle, { tenantId: "acme" })
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "Received", payload: { by: "ann" }, seq: sent.body.seq })
      const late = yield* post(port, "/threads/th-1/signals/approve", { payload: { by: "late" } })
      assert.deepStrictEqual([late.status, late.body.error], [409, "ThreadNotRunningError"])
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [wf], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [wf] })),
        Layer.provideMerge(MemoryStores.layer)
      )
    )))
})
