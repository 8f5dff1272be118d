/**
 * BatonHttp through a real Node server on an ephemeral port of 127.0.0.1:
 * probes (readyz flips to 503 when a store's ping fails), start, status,
 * list, pending pauses, resume, cancel, bodies that do not decode (400 with
 * the path, nothing written), and requests the app's tenant hook refuses.
 * The runtime runs on the TestClock; only the HTTP round trips are real I/O.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { StoreError } from "../../src/stores/Errors.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const fx = makeSideEffects()
const wf = approval(fx)

/** The app's hook: the tenant from `x-tenant`, the owner from `x-owner`; no tenant header, no call. */
const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(
    typeof request.headers["x-tenant"] === "string"
      ? { tenantId: request.headers["x-tenant"], ownerId: request.headers["x-owner"] }
      : undefined
  )

/** Memory stores whose lease store's ping fails while `broken.on` is set (a store going away). */
const storesWithFaultyPing = (broken: { on: boolean }) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<LeaseStore>()
    const leases = Context.get(context, LeaseStore)
    return Context.add(context, LeaseStore, {
      ...leases,
      ping: Effect.suspend(() =>
        broken.on
          ? Effect.fail(new StoreError({ store: "LeaseStore", operation: "ping", reason: "connection refused", kind: "Connection" }))
          : leases.ping
      )
    })
  })).pipe(Layer.provideMerge(MemoryStores.layer))

const serve = (broken: { on: boolean }) =>
  BatonHttp.layerServer({ workflows: [wf], authorize, port: 0 }).pipe(
    Layer.provideMerge(Baton.layer({ workflows: [wf] })),
    Layer.provide(storesWithFaultyPing(broken))
  )

/** A real HTTP round trip: status and parsed JSON (or text). */
const call = (port: number, method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...options.headers },
      ...(options.body === undefined ? {} : { body: options.body })
    })
    const text = await response.text()
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {}
    return { status: response.status, body }
  })

const tenantA = { "x-tenant": "acme", "x-owner": "ops" }

const withServer = <A, E>(f: (port: number, broken: { on: boolean }) => Effect.Effect<A, E>) => {
  const broken = { on: false }
  return Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    return yield* f(BatonHttp.port(server), broken)
  }).pipe(Effect.provide(serve(broken)))
}

describe("BatonHttp over a real server", () => {
  it.effect("without an authorize hook the Layer does not build: BatonConfigError naming the field", () =>
    Effect.gen(function*() {
      const error = yield* Layer.build(
        BatonHttp.layerServer({ workflows: [wf], port: 0 } as unknown as BatonHttp.Options & { port: number }).pipe(
          Layer.provide(Baton.layer({ workflows: [wf] })),
          Layer.provide(MemoryStores.layer)
        )
      ).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual((error as { _tag: string })._tag, "BatonConfigError")
      assert.strictEqual((error as { field: string }).field, "authorize")
      const badPrefix = yield* Layer.build(
        BatonHttp.layerServer({ workflows: [wf], authorize, port: 0, prefix: "baton/" }).pipe(
          Layer.provide(Baton.layer({ workflows: [wf] })),
          Layer.provide(MemoryStores.layer)
        )
      ).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual((badPrefix as { field: string }).field, "prefix")
    }))

  it.effect("routes under a prefix", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = BatonHttp.port(server)
      const live = yield* call(port, "GET", "/baton/livez")
      assert.strictEqual(live.status, 200)
      assert.strictEqual((yield* call(port, "GET", "/livez")).status, 404)
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [wf], authorize, port: 0, prefix: "/baton" }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [wf] })),
        Layer.provide(MemoryStores.layer)
      )
    )))

  it.effect("start, status, pending pauses, resume (on the same API), list", () =>
    withServer((port) =>
      Effect.gen(function*() {
        const started = yield* call(port, "POST", "/executions", {
          headers: tenantA,
          body: JSON.stringify({ workflow: "approval", input: { log: [] }, threadId: "thread-1" })
        })
        assert.strictEqual(started.status, 202, JSON.stringify(started.body))
        assert.strictEqual(started.body.tenantId, "acme")
        assert.strictEqual(started.body.threadId, "thread-1")
        const id = started.body.executionId as string
        // The run goes on in the instance: wait for it to rest through the API itself.
        let status = yield* call(port, "GET", `/executions/${id}`, { headers: tenantA })
        for (let i = 0; i < 200 && status.body.status === "Running"; i++) {
          yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
          status = yield* call(port, "GET", `/executions/${id}`, { headers: tenantA })
        }
        assert.strictEqual(status.status, 200)
        assert.strictEqual(status.body.status, "Paused")
        assert.strictEqual(status.body.workflowName, "approval")
        const pauses = yield* call(port, "GET", "/threads/thread-1/pauses", { headers: tenantA })
        assert.strictEqual(pauses.status, 200)
        assert.strictEqual(pauses.body.pauses.length, 1)
        assert.deepStrictEqual(pauses.body.pauses[0].payload, { question: "send it?" })
        const resumed = yield* call(port, "POST", `/pauses/${pauses.body.pauses[0].pauseId}/resume`, {
          headers: tenantA,
          body: JSON.stringify({ decision: "yes" })
        })
        assert.strictEqual(resumed.status, 200, JSON.stringify(resumed.body))
        assert.strictEqual(resumed.body._tag, "Finished")
        assert.deepStrictEqual(resumed.body.output.log, ["draft", "approved:yes", "sent"])
        const again = yield* call(port, "POST", `/pauses/${pauses.body.pauses[0].pauseId}/resume`, {
          headers: tenantA,
          body: JSON.stringify({ decision: "no" })
        })
        assert.strictEqual(again.status, 409, "a pause is answered once")
        assert.strictEqual(again.body.error, "NotPausedError")
        const list = yield* call(port, "GET", "/executions?status=Finished", { headers: tenantA })
        assert.strictEqual(list.status, 200)
        assert.deepStrictEqual(list.body.executions.map((e: any) => e.executionId), [id])
        const badStatus = yield* call(port, "GET", "/executions?status=Sleeping", { headers: tenantA })
        assert.strictEqual(badStatus.status, 400)
        assert.deepStrictEqual(badStatus.body.issues[0].path, ["status"])
      })
    ))

  it.effect("bad bodies are 400 with the path of the error, and nothing is written", () =>
    withServer((port) =>
      Effect.gen(function*() {
        const noWorkflow = yield* call(port, "POST", "/executions", { headers: tenantA, body: JSON.stringify({ workflow: 5, input: {} }) })
        assert.strictEqual(noWorkflow.status, 400)
        assert.strictEqual(noWorkflow.body.error, "InvalidBody")
        assert.deepStrictEqual(noWorkflow.body.issues.map((i: any) => i.path), [["workflow"]])
        const nested = yield* call(port, "POST", "/executions", {
          headers: tenantA,
          body: JSON.stringify({ workflow: "approval", input: {}, threadId: ["x"] })
        })
        assert.strictEqual(nested.status, 400)
        assert.deepStrictEqual(nested.body.issues.map((i: any) => i.path), [["threadId"]])
        const notJson = yield* call(port, "POST", "/executions", { headers: tenantA, body: "{ not json" })
        assert.strictEqual(notJson.status, 400)
        const unknown = yield* call(port, "POST", "/executions", { headers: tenantA, body: JSON.stringify({ workflow: "nope", input: {} }) })
        assert.strictEqual(unknown.status, 400)
        assert.strictEqual(unknown.body.error, "UnknownWorkflowError")
        const list = yield* call(port, "GET", "/executions", { headers: tenantA })
        assert.deepStrictEqual(list.body.executions, [], "no execution was started by a bad body")
        const noDecision = yield* call(port, "POST", "/pauses/pause_1/resume", { headers: tenantA, body: JSON.stringify({}) })
        assert.strictEqual(noDecision.status, 400)
        // the body is a decision or a free-text reply: both are named as missing
        assert.deepStrictEqual(noDecision.body.issues.map((i: any) => i.path), [["decision"], ["reply"]])
      })
    ))

  it.effect("the tenant hook: a request without a tenant is refused; another tenant sees nothing and cancels nothing", () =>
    withServer((port) =>
      Effect.gen(function*() {
        const refused = yield* call(port, "POST", "/executions", { body: JSON.stringify({ workflow: "approval", input: { log: [] } }) })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.body.error, "Unauthorized")
        assert.strictEqual((yield* call(port, "GET", "/executions")).status, 401)
        const started = yield* call(port, "POST", "/executions", {
          headers: tenantA,
          body: JSON.stringify({ workflow: "approval", input: { log: [] }, threadId: "t-iso" })
        })
        assert.strictEqual(started.status, 202)
        const other = { "x-tenant": "globex" }
        const seen = yield* call(port, "GET", `/executions/${started.body.executionId}`, { headers: other })
        assert.strictEqual(seen.status, 404)
        assert.strictEqual(seen.body.error, "UnknownExecutionError")
        assert.deepStrictEqual((yield* call(port, "GET", "/executions", { headers: other })).body.executions, [])
        const cancelOther = yield* call(port, "POST", "/threads/t-iso/cancel", { headers: other })
        assert.strictEqual(cancelOther.status, 404)
        const wrongOwner = yield* call(port, "POST", "/threads/t-iso/cancel", { headers: { "x-tenant": "acme", "x-owner": "mallory" } })
        assert.strictEqual(wrongOwner.status, 403)
        assert.strictEqual(wrongOwner.body.error, "ThreadOwnerError")
        const cancelled = yield* call(port, "POST", "/threads/t-iso/cancel", { headers: tenantA })
        assert.strictEqual(cancelled.status, 200)
        assert.strictEqual(cancelled.body.cancelled, true)
        const status = yield* call(port, "GET", `/executions/${started.body.executionId}`, { headers: tenantA })
        assert.strictEqual(status.body.status, "Cancelled")
      })
    ))

  it.effect("livez and readyz answer 200; readyz flips to 503 naming the store when its ping fails, and back", () =>
    withServer((port, broken) =>
      Effect.gen(function*() {
        const live = yield* call(port, "GET", "/livez")
        assert.strictEqual(live.status, 200)
        assert.strictEqual(live.body.status, "Healthy")
        const ready = yield* call(port, "GET", "/readyz")
        assert.strictEqual(ready.status, 200)
        assert.isTrue(ready.body.components.some((c: any) => c.name === "lease-store" && c.status === "Healthy"))
        broken.on = true
        const down = yield* call(port, "GET", "/readyz")
        assert.strictEqual(down.status, 503)
        assert.strictEqual(down.body.status, "Unhealthy")
        const lease = down.body.components.find((c: any) => c.name === "lease-store")
        assert.strictEqual(lease.status, "Unhealthy")
        assert.include(lease.message, "connection refused")
        assert.strictEqual((yield* call(port, "GET", "/livez")).status, 200, "liveness does no I/O")
        broken.on = false
        assert.strictEqual((yield* call(port, "GET", "/readyz")).status, 200)
        const metrics = yield* call(port, "GET", "/metrics")
        assert.strictEqual(metrics.status, 200)
        assert.include(metrics.body, "baton_trees_held")
      })
    ))
})
