/**
 * `GET /threads/:threadId/checkpoints` through a real Node server on an
 * ephemeral port of 127.0.0.1: a thread's state history page by page,
 * scoped to the caller's tenant and owner, and in the OpenAPI document.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const wf = approval(makeSideEffects())

const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(
    typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"], ownerId: request.headers["x-owner"] } : undefined
  )

const call = (port: number, path: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
    return { status: response.status, body: (await response.json()) as any }
  })

describe("BatonHttp: a thread's checkpoints", () => {
  it.effect("pages the caller's thread newest first; another tenant gets 404, another owner 403, a bad limit 400", () =>
    Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const out = yield* baton.execute(wf, { log: [] }, { tenantId: "acme", ownerId: "ops", threadId: "t-1" })
      assert.strictEqual(out._tag, "Paused")
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const mine = { "x-tenant": "acme", "x-owner": "ops" }
      const first = yield* call(port, "/threads/t-1/checkpoints?limit=2", mine)
      assert.strictEqual(first.status, 200, JSON.stringify(first.body))
      assert.strictEqual(first.body.checkpoints.length, 2)
      assert.isString(first.body.next)
      const rest = yield* call(port, `/threads/t-1/checkpoints?limit=100&cursor=${first.body.next}`, mine)
      const all = [...first.body.checkpoints, ...rest.body.checkpoints]
      assert.strictEqual(rest.body.next, null)
      assert.deepStrictEqual(all.map((c: any) => c.step), [...all.map((c: any) => c.step)].sort((a, b) => b - a), "newest first")
      assert.strictEqual(all[all.length - 1].source, "input")
      assert.isTrue(all.every((c: any) => c.executionId === out.executionId))
      assert.deepStrictEqual(all.find((c: any) => c.nodes.includes("draft"))?.nodes, ["draft"])
      assert.strictEqual((yield* call(port, "/threads/t-1/checkpoints", { "x-tenant": "beta", "x-owner": "ops" })).status, 404)
      assert.strictEqual((yield* call(port, "/threads/t-1/checkpoints", { "x-tenant": "acme", "x-owner": "eve" })).status, 403)
      const bad = yield* call(port, "/threads/t-1/checkpoints?limit=0", mine)
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.body.error, "InvalidInputError")
      const openApi = yield* call(port, "/openapi.json", {})
      assert.isDefined(openApi.body.paths["/threads/{threadId}/checkpoints"]?.get, "in the OpenAPI document")
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [wf], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [wf] })),
        Layer.provideMerge(MemoryStores.layer)
      )
    )))
})
