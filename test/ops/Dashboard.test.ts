/**
 * The dashboard's server side through a real Node server on an ephemeral
 * 127.0.0.1 port (memory stores): every route behind `authorize` (401
 * without a caller); the executions listing scoped to the caller's tenants
 * and filtered by status, workflow, thread and time, paged; one execution's
 * view with its decision's JSON Schema; mutations refused without a JSON
 * body, without the page's CSRF token, or from another origin — and done with
 * them; the live listing over SSE.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpServer } from "effect/http"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, Workflow } from "../../src/index.ts"

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })
const ask = Workflow.make({
  name: "ask",
  version: "1",
  decision: Schema.Struct({ approved: Schema.Boolean }),
  graph: new StateGraph(State)
    .addNode("ask", async () => ({ log: [`answer:${JSON.stringify(interrupt({ q: "?" }))}`] }))
    .addEdge(START, "ask")
    .addEdge("ask", END)
})
const once = Workflow.make({
  name: "once",
  version: "1",
  graph: new StateGraph(State).addNode("only", async () => ({ log: ["only"] })).addEdge(START, "only").addEdge("only", END)
})

/** The caller from headers: `x-tenant` (and `x-tenants`, comma-separated, for an operator). */
const authorize: BatonHttp.Authorize = (request) => {
  const tenant = request.headers["x-tenant"]
  if (typeof tenant !== "string") return undefined
  const many = request.headers["x-tenants"]
  return { tenantId: tenant, tenantIds: typeof many === "string" ? many.split(",") : undefined }
}

const call = (port: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await response.text()
    let json: any = null
    try {
      json = JSON.parse(text)
    } catch {
      json = null
    }
    return { status: response.status, text, json, headers: response.headers }
  })

describe("the dashboard's routes", () => {
  it.live("pages and API behind authorize, tenant-scoped, filtered and paged; mutations need JSON, the CSRF token and this origin", () =>
    Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const acme = { "x-tenant": "acme" }
      for (let i = 0; i < 5; i++) yield* baton.execute(once, { log: [] }, { tenantId: "acme", threadId: `acme-once-${i}` })
      const paused = yield* baton.execute(ask, { log: [] }, { tenantId: "acme", threadId: "acme-ask" })
      yield* baton.execute(once, { log: [] }, { tenantId: "globex", threadId: "globex-once" })
      if (paused._tag !== "Paused") return assert.fail("expected a pause")

      assert.strictEqual((yield* call(port, "GET", "/dashboard")).status, 401, "no caller: 401")
      assert.strictEqual((yield* call(port, "GET", "/dashboard/api/executions")).status, 401)
      const html = yield* call(port, "GET", "/dashboard", acme)
      assert.strictEqual(html.status, 200)
      assert.match(html.headers.get("content-security-policy") ?? "", /script-src 'self'/)
      const csrf = /name="baton-csrf" content="([^"]+)"/.exec(html.text)?.[1] ?? ""
      assert.isAbove(csrf.length, 20)
      assert.match((yield* call(port, "GET", "/dashboard/app.js", acme)).text, /formFor/)

      const all = yield* call(port, "GET", "/dashboard/api/executions?limit=4", acme)
      assert.match(all.headers.get("server-timing") ?? "", /^app;dur=/)
      assert.strictEqual(all.json.executions.length, 4)
      assert.isTrue(all.json.executions.every((e: any) => e.tenantId === "acme"))
      const second = yield* call(port, "GET", `/dashboard/api/executions?limit=4&cursor=${all.json.next}`, acme)
      assert.deepStrictEqual(second.json.executions.length, 2, "6 of acme's in all, none of globex's")
      assert.strictEqual(second.json.next, null)
      const pausedOnly = yield* call(port, "GET", "/dashboard/api/executions?status=Paused", acme)
      assert.deepStrictEqual(pausedOnly.json.executions.map((e: any) => e.threadId), ["acme-ask"])
      assert.strictEqual((yield* call(port, "GET", "/dashboard/api/executions?workflow=ask", acme)).json.executions.length, 1)
      assert.deepStrictEqual((yield* call(port, "GET", "/dashboard/api/executions?thread=acme-once-2", acme)).json.executions.map((e: any) => e.threadId), ["acme-once-2"])
      const oldest = [...all.json.executions, ...second.json.executions].at(-1)
      const before = yield* call(port, "GET", `/dashboard/api/executions?to=${oldest.createdAt + 1}`, acme)
      assert.isTrue(before.json.executions.every((e: any) => e.createdAt <= oldest.createdAt), "created before `to`")
      const after = yield* call(port, "GET", `/dashboard/api/executions?from=${Date.now() + 60_000}`, acme)
      assert.deepStrictEqual(after.json.executions, [], "none created after `from`")
      assert.strictEqual((yield* call(port, "GET", "/dashboard/api/executions?tenant=globex", acme)).status, 400, "a tenant the caller may not see")
      const operator = yield* call(port, "GET", "/dashboard/api/executions?tenant=globex", { "x-tenant": "acme", "x-tenants": "acme,globex" })
      assert.deepStrictEqual(operator.json.executions.map((e: any) => e.threadId), ["globex-once"], "an operator filters by tenant")

      const view = yield* call(port, "GET", `/dashboard/api/execution/acme/${paused.executionId}`, acme)
      assert.strictEqual(view.json.status.status, "Paused")
      assert.strictEqual(view.json.decisionSchema.type, "object")
      assert.deepStrictEqual(view.json.decisionSchema.required, ["approved"])
      assert.isAbove(view.json.states.length, 0)
      assert.strictEqual((yield* call(port, "GET", `/dashboard/api/execution/globex/${paused.executionId}`, acme)).status, 404)
      assert.strictEqual((yield* call(port, "GET", `/dashboard/api/execution/acme/${paused.executionId}`, { "x-tenant": "globex" })).status, 404)

      const answer = { tenantId: "acme", pauseId: paused.pauses[0]!.pauseId, decision: { approved: true } }
      const json = { "content-type": "application/json" }
      assert.strictEqual((yield* call(port, "POST", "/dashboard/api/resume", { ...acme, ...json }, answer)).status, 403, "no token")
      assert.strictEqual((yield* call(port, "POST", "/dashboard/api/resume", { ...acme, "content-type": "text/plain", "x-baton-csrf": csrf }, answer)).status, 403, "not JSON")
      assert.strictEqual((yield* call(port, "POST", "/dashboard/api/resume", { ...acme, ...json, "x-baton-csrf": csrf, origin: "https://evil.example" }, answer)).status, 403, "another origin")
      const globexCsrf = /name="baton-csrf" content="([^"]+)"/.exec((yield* call(port, "GET", "/dashboard", { "x-tenant": "globex" })).text)?.[1] ?? ""
      assert.strictEqual((yield* call(port, "POST", "/dashboard/api/resume", { ...acme, ...json, "x-baton-csrf": globexCsrf }, answer)).status, 403, "another caller's token")
      const ok = yield* call(port, "POST", "/dashboard/api/resume", { ...acme, ...json, "x-baton-csrf": csrf, origin: `http://127.0.0.1:${port}` }, answer)
      assert.strictEqual(ok.status, 200)
      assert.strictEqual((yield* baton.status(paused.executionId, { tenantId: "acme" })).status, "Finished")
      const cancel = yield* call(port, "POST", "/dashboard/api/cancel", { ...acme, ...json, "x-baton-csrf": csrf }, { tenantId: "acme", threadId: "acme-ask" })
      assert.deepStrictEqual(cancel.json, { cancelled: false }, "nothing left to cancel")

      const instances = yield* call(port, "GET", "/dashboard/api/instances", acme)
      assert.strictEqual(instances.json.self.instanceId, baton.instanceId)
      assert.isArray(instances.json.self.readiness.components)
      const limits = yield* call(port, "GET", "/dashboard/api/limits", acme)
      assert.deepStrictEqual(limits.json.spend.map((s: any) => s.tenantId), ["acme"])

      // The live listing: its first view arrives over SSE.
      const live = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(`http://127.0.0.1:${port}/dashboard/api/executions/live?status=Finished`, { headers: acme, signal: controller.signal })
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
        let text = ""
        while (!text.includes("\n\n")) text += (await reader.read()).value ?? ""
        controller.abort()
        return { type: response.headers.get("content-type"), text }
      })
      assert.match(live.type ?? "", /^text\/event-stream/)
      assert.match(live.text, /^event: view\ndata: \{/)
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [ask, once], authorize, port: 0, dashboard: true }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [ask, once], liveOutput: true })),
        Layer.provide(MemoryStores.layer)
      )
    )))
})
