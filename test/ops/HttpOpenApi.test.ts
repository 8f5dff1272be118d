/**
 * BatonHttp's `/openapi.json` (made by effect's OpenApi from the routes'
 * Schemas) and its thread-history route, through a real Node server on an
 * ephemeral 127.0.0.1 port.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { TestClock } from "effect/testing"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const wf = approval(makeSideEffects())

const authorize: BatonHttp.Authorize = (request) =>
  typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined

const call = (port: number, method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...options.headers },
      ...(options.body === undefined ? {} : { body: options.body })
    })
    return { status: response.status, body: await response.json() as any }
  })

const withServer = <A, E>(prefix: string | undefined, f: (port: number) => Effect.Effect<A, E, Baton.Baton>) =>
  Effect.gen(function*() {
    return yield* f(BatonHttp.port(yield* HttpServer.HttpServer))
  }).pipe(Effect.provide(
    BatonHttp.layerServer({ workflows: [wf], authorize, port: 0, prefix }).pipe(
      Layer.provideMerge(Baton.layer({ workflows: [wf] })),
      Layer.provide(MemoryStores.layer)
    )
  ))

/** Every route the server answers (method and path, OpenAPI style). */
const routes = [
  "get /livez", "get /readyz", "get /metrics",
  "post /executions", "get /executions", "get /executions/{executionId}",
  "get /threads/{threadId}/pauses", "get /threads/{threadId}/history",
  "post /pauses/{pauseId}/resume", "post /threads/{threadId}/cancel",
  "post /threads/{threadId}/signals/{name}",
  "get /threads/{threadId}/checkpoints",
  "get /threads/{threadId}/stream"
]

const operations = (doc: any) =>
  Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort()

describe("BatonHttp's OpenAPI document", () => {
  it.effect("GET /openapi.json: OpenAPI 3.1, every route (under the prefix), the bodies' schemas, the error statuses", () =>
    Effect.gen(function*() {
      for (const prefix of [undefined, "/baton"]) {
        yield* withServer(prefix, (port) =>
          Effect.gen(function*() {
            const { status, body: doc } = yield* call(port, "GET", `${prefix ?? ""}/openapi.json`)
            assert.strictEqual(status, 200)
            assert.strictEqual(doc.openapi, "3.1.0")
            assert.deepStrictEqual(operations(doc), routes.map((r) => r.replace(" /", ` ${prefix ?? ""}/`)).sort())
            // Each route the document names answers (not 404 from the router): probed without a tenant, 401 or 200.
            for (const route of routes) {
              const [method, path] = route.split(" ") as [string, string]
              const concrete = `${prefix ?? ""}${path.replace(/\{[^}]+\}/g, "x")}`
              const answered = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}${concrete}`, { method: method.toUpperCase() }))
              assert.include([200, 401, 503], answered.status, `${route} is served`)
            }
            const start = doc.paths[`${prefix ?? ""}/executions`].post
            const body = start.requestBody.content["application/json"].schema
            const resolved = body.$ref === undefined ? body : doc.components.schemas[body.$ref.split("/").pop()]
            assert.includeMembers(Object.keys(resolved.properties), ["workflow", "input", "threadId", "requestKey"])
            assert.includeMembers(resolved.required, ["workflow", "input"])
            assert.includeMembers(Object.keys(start.responses), ["202", "400", "401", "404", "413", "429", "503"])
          }))
      }
    }))
})

describe("BatonHttp's thread history", () => {
  it.effect("GET /threads/:threadId/history: the thread's executions oldest first, each ended one with its steps and pauses; another tenant's is 404", () =>
    withServer(undefined, (port) =>
      Effect.gen(function*() {
        const baton = yield* Baton.Baton
        const tenant = { tenantId: "acme" }
        for (const decision of ["yes", "no"]) {
          const paused = yield* baton.execute(wf, { log: [] }, { ...tenant, threadId: "t-history" })
          assert.strictEqual(paused._tag, "Paused")
          if (paused._tag === "Paused") yield* baton.resume({ ...tenant, pauseId: paused.pauses[0]!.pauseId, decision })
          yield* TestClock.adjust("1 second")
        }
        const third = yield* baton.execute(wf, { log: [] }, { ...tenant, threadId: "t-history" })
        const { status, body } = yield* call(port, "GET", "/threads/t-history/history", { headers: { "x-tenant": "acme" } })
        assert.strictEqual(status, 200, JSON.stringify(body))
        assert.strictEqual(body.threadId, "t-history")
        assert.deepStrictEqual(body.executions.map((e: any) => e.status), ["Finished", "Finished", "Paused"])
        assert.strictEqual(body.executions[2].executionId, third.executionId)
        const [first] = body.executions
        assert.includeMembers(first.history.steps.map((s: any) => s.node), ["draft", "approve", "send"])
        assert.strictEqual(first.history.pauses.length, 1)
        assert.isNull(body.executions[2].history, "a paused execution has no snapshot yet")
        const other = yield* call(port, "GET", "/threads/t-history/history", { headers: { "x-tenant": "other" } })
        assert.strictEqual(other.status, 404)
        const refused = yield* call(port, "GET", "/threads/t-history/history")
        assert.strictEqual(refused.status, 401)
      })))
})
