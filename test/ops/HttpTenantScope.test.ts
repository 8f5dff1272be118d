/**
 * BatonHttp takes the tenant (and owner) only from the app's authorize hook:
 * on every tenant-scoped route, another tenant named in the query string
 * (`?tenantId=`, `?ownerId=`) or in the body changes nothing — the call runs
 * as the caller's tenant, and the other tenant's executions, threads and
 * pauses answer 404. Through a real Node server on 127.0.0.1; the runtime
 * runs on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const wf = approval(makeSideEffects())

/** The tenant from `x-tenant`, the owner from `x-owner`. */
const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(
    typeof request.headers["x-tenant"] === "string"
      ? { tenantId: request.headers["x-tenant"], ownerId: request.headers["x-owner"] }
      : undefined
  )

const serve = BatonHttp.layerServer({ workflows: [wf], authorize, port: 0 }).pipe(
  Layer.provideMerge(Baton.layer({ workflows: [wf] })),
  Layer.provide(MemoryStores.layer)
)

const call = (port: number, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...options.headers },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    const text = await response.text()
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {}
    return { status: response.status, body }
  })

const acme = { "x-tenant": "acme", "x-owner": "ops" }
const globex = { "x-tenant": "globex" }
/** What a caller of another tenant adds to every query string and body: acme's tenant and owner. */
const asAcme = "tenantId=acme&ownerId=ops"
const acmeInBody = { tenantId: "acme", ownerId: "ops" }

describe("BatonHttp tenant scoping: the tenant comes from authorize, never from the query or the body", () => {
  it.effect("on every route, another tenant in the query string and the body is ignored: the caller's tenant, 404 for the other's", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const rest = (headers: Record<string, string>, id: string) =>
        Effect.gen(function*() {
          let status = yield* call(port, "GET", `/executions/${id}`, { headers })
          for (let i = 0; i < 200 && status.body.status === "Running"; i++) {
            yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
            status = yield* call(port, "GET", `/executions/${id}`, { headers })
          }
          return status
        })
      // acme's execution, paused on its thread.
      const theirs = yield* call(port, "POST", "/executions", { headers: acme, body: { workflow: "approval", input: { log: [] }, threadId: "t-acme" } })
      assert.strictEqual(theirs.status, 202)
      assert.strictEqual((yield* rest(acme, theirs.body.executionId)).body.status, "Paused")
      const pauseId = (yield* call(port, "GET", "/threads/t-acme/pauses", { headers: acme })).body.pauses[0].pauseId as string

      // POST /executions: started under the caller's tenant, whatever the query and the body say.
      const mine = yield* call(port, "POST", `/executions?${asAcme}`, {
        headers: globex,
        body: { workflow: "approval", input: { log: [] }, threadId: "t-globex", ...acmeInBody }
      })
      assert.strictEqual(mine.status, 202, JSON.stringify(mine.body))
      assert.strictEqual(mine.body.tenantId, "globex", "started as the caller's tenant")
      assert.strictEqual((yield* rest(globex, mine.body.executionId)).body.status, "Paused", "the caller's own execution")
      assert.strictEqual((yield* call(port, "GET", `/executions/${mine.body.executionId}`, { headers: acme })).status, 404, "not acme's")

      // GET /executions: the caller's page only.
      const page = yield* call(port, "GET", `/executions?${asAcme}`, { headers: globex })
      assert.strictEqual(page.status, 200)
      assert.deepStrictEqual(page.body.executions.map((e: any) => e.executionId), [mine.body.executionId])
      assert.isTrue(page.body.executions.every((e: any) => e.tenantId === "globex"))

      // GET /executions/:id: acme's is unknown to the caller.
      const status = yield* call(port, "GET", `/executions/${theirs.body.executionId}?${asAcme}`, { headers: globex })
      assert.strictEqual(status.status, 404, JSON.stringify(status.body))
      assert.strictEqual(status.body.error, "UnknownExecutionError")

      // GET /threads/:threadId/pauses: acme's thread is unknown to the caller.
      const pauses = yield* call(port, "GET", `/threads/t-acme/pauses?${asAcme}`, { headers: globex })
      assert.strictEqual(pauses.status, 404, JSON.stringify(pauses.body))

      // POST /pauses/:pauseId/resume: acme's pause is unknown to the caller.
      const resumed = yield* call(port, "POST", `/pauses/${pauseId}/resume?${asAcme}`, { headers: globex, body: { decision: "yes", ...acmeInBody } })
      assert.strictEqual(resumed.status, 404, JSON.stringify(resumed.body))
      assert.strictEqual(resumed.body.error, "UnknownPauseError")

      // POST /threads/:threadId/cancel: acme's thread is unknown to the caller.
      const cancelled = yield* call(port, "POST", `/threads/t-acme/cancel?${asAcme}`, { headers: globex, body: acmeInBody })
      assert.strictEqual(cancelled.status, 404, JSON.stringify(cancelled.body))

      // acme's execution is untouched: still paused on its pending pause.
      const after = yield* call(port, "GET", `/executions/${theirs.body.executionId}`, { headers: acme })
      assert.strictEqual(after.body.status, "Paused")
      const still = yield* call(port, "GET", "/threads/t-acme/pauses", { headers: acme })
      assert.deepStrictEqual(still.body.pauses.map((p: any) => p.pauseId), [pauseId])
      // And the caller's own routes work on its own tenant with the same query and body.
      const own = (yield* call(port, "GET", "/threads/t-globex/pauses", { headers: globex })).body.pauses[0].pauseId as string
      const done = yield* call(port, "POST", `/pauses/${own}/resume?${asAcme}`, { headers: globex, body: { decision: "ok", ...acmeInBody } })
      assert.strictEqual(done.status, 200, JSON.stringify(done.body))
      assert.strictEqual(done.body._tag, "Finished")
    }).pipe(Effect.provide(serve)))

  it.effect("another owner in the query string or the body does not open a thread the caller's owner cannot see", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const started = yield* call(port, "POST", "/executions", { headers: acme, body: { workflow: "approval", input: { log: [] }, threadId: "t-owned" } })
      assert.strictEqual(started.status, 202)
      const eve = { "x-tenant": "acme", "x-owner": "eve" }
      const byQuery = yield* call(port, "GET", `/executions/${started.body.executionId}?ownerId=ops`, { headers: eve })
      assert.notStrictEqual(byQuery.status, 200, "eve does not read ops's execution by naming ops in the query")
      const cancel = yield* call(port, "POST", "/threads/t-owned/cancel?ownerId=ops", { headers: eve, body: { ownerId: "ops" } })
      assert.notStrictEqual(cancel.status, 200, "eve does not cancel ops's thread by naming ops")
      const list = yield* call(port, "GET", "/executions?ownerId=ops", { headers: eve })
      assert.deepStrictEqual(list.body.executions, [], "eve lists none of ops's executions")
    }).pipe(Effect.provide(serve)))
})
