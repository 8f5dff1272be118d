/**
 * The schedule routes of BatonHttp, present when the app provides the
 * `Schedules` service: create (201; a bad option 400 naming the field; an
 * unknown workflow 400), read, list, pause, resume, delete — scoped to the
 * caller's tenant (another tenant's schedule is 404) and owner (403). The
 * runtime runs on the TestClock over the memory stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, BatonErrors, Schedules } from "../../src/index.ts"
import { report } from "../runtime/schedules/fixtures.ts"

const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(typeof request.headers["x-tenant"] === "string"
    ? { tenantId: request.headers["x-tenant"], ownerId: request.headers["x-owner"] as string | undefined }
    : undefined)

const call = (port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = { "x-tenant": "acme", "x-owner": "alice" }) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    return { status: response.status, body: await response.json() as any }
  })

const server = BatonHttp.layerServer({ workflows: [report], authorize, port: 0 }).pipe(
  Layer.provideMerge(Layer.merge(Baton.layer({ workflows: [report] }), Schedules.layer)),
  Layer.provide(MemoryStores.layer)
)

describe("BatonHttp schedule routes", () => {
  it.effect("create, read, list, pause, resume and delete a schedule, for the caller's tenant and owner", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const body = { scheduleId: "nightly", workflow: "report", input: { log: [] }, cron: "0 2 * * *", timeZone: "Europe/Berlin" }
      const made = yield* call(port, "POST", "/schedules", body)
      assert.strictEqual(made.status, 201)
      assert.deepStrictEqual([made.body.scheduleId, made.body.ownerId, made.body.timing.timeZone, made.body.paused], ["nightly", "alice", "Europe/Berlin", false])
      assert.strictEqual((yield* call(port, "POST", "/schedules", body)).status, 201, "the same definition again answers the kept one")
      const conflict = yield* call(port, "POST", "/schedules", { ...body, cron: "0 3 * * *" })
      assert.deepStrictEqual([conflict.status, conflict.body.error], [409, "ScheduleExistsError"])
      const bad = yield* call(port, "POST", "/schedules", { ...body, scheduleId: "other", timeZone: "Mars/Olympus" })
      assert.deepStrictEqual([bad.status, bad.body.error], [400, "InvalidInputError"])
      assert.match(bad.body.message, /`timeZone`/)
      const badEvery = yield* call(port, "POST", "/schedules", { scheduleId: "e", workflow: "report", input: {}, every: "often" })
      assert.deepStrictEqual([badEvery.status, badEvery.body.error], [400, "InvalidInputError"])
      const unknownWorkflow = yield* call(port, "POST", "/schedules", { ...body, scheduleId: "x", workflow: "nope" })
      assert.deepStrictEqual([unknownWorkflow.status, unknownWorkflow.body.error], [400, "UnknownWorkflowError"])
      const every = yield* call(port, "POST", "/schedules", { scheduleId: "quarter", workflow: "report", input: { log: [] }, every: "15 minutes", overlap: "allow" })
      assert.deepStrictEqual([every.status, every.body.timing], [201, { _tag: "Every", everyMillis: 900_000, anchor: 900_000 }])

      const read = yield* call(port, "GET", "/schedules/nightly")
      assert.deepStrictEqual([read.status, read.body.nextFireAt], [200, made.body.nextFireAt])
      const page = yield* call(port, "GET", "/schedules?limit=10")
      assert.deepStrictEqual([page.status, page.body.schedules.map((s: any) => s.scheduleId)], [200, ["nightly", "quarter"]])
      assert.strictEqual((yield* call(port, "GET", "/schedules/nightly", undefined, { "x-tenant": "other", "x-owner": "alice" })).status, 404, "another tenant's")
      const otherOwner = yield* call(port, "POST", "/schedules/nightly/pause", undefined, { "x-tenant": "acme", "x-owner": "bob" })
      assert.deepStrictEqual([otherOwner.status, otherOwner.body.error], [403, "ScheduleOwnerError"])
      const paused = yield* call(port, "POST", "/schedules/nightly/pause")
      assert.deepStrictEqual([paused.status, paused.body.paused], [200, true])
      const resumed = yield* call(port, "POST", "/schedules/nightly/resume")
      assert.deepStrictEqual([resumed.status, resumed.body.paused], [200, false])
      const deleted = yield* call(port, "DELETE", "/schedules/nightly")
      assert.deepStrictEqual([deleted.status, deleted.body], [200, { deleted: true }])
      const gone = yield* call(port, "GET", "/schedules/nightly")
      assert.deepStrictEqual([gone.status, gone.body.error], [404, "UnknownScheduleError"])
      assert.strictEqual((yield* call(port, "GET", "/schedules", undefined, {})).status, 401, "no caller")
      const doc = (yield* call(port, "GET", "/openapi.json")).body
      const scheduleOps = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
        .filter(([path]) => path.startsWith("/schedules"))
        .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`))
        .sort()
      assert.deepStrictEqual(scheduleOps, [
        "delete /schedules/{scheduleId}",
        "get /schedules",
        "get /schedules/{scheduleId}",
        "post /schedules",
        "post /schedules/{scheduleId}/pause",
        "post /schedules/{scheduleId}/resume"
      ], "the document names the schedule routes served")
    }).pipe(Effect.provide(server)))

  it("the schedule errors answer their statuses", () => {
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.UnknownScheduleError({ tenantId: "t", scheduleId: "s" })), 404)
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.ScheduleOwnerError({ tenantId: "t", scheduleId: "s" })), 403)
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.ScheduleExistsError({ tenantId: "t", scheduleId: "s" })), 409)
  })
})
