/**
 * BatonHttp answers a start refused by the tenant quota (`tenantQuota` with
 * `onOverQuota: "fail"`) with 429 Too Many Requests and the error's tag: the
 * client may retry later; nothing was started. (It answered 500, an internal
 * error, for a refusal the caller can act on.) The runtime runs on the
 * TestClock: the first execution's 45 s step holds the tenant's one permit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { makeSideEffects, slow } from "../runtime/fixtures.ts"

const long = slow(makeSideEffects())
const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined)

const start = (port: number) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-tenant": "acme" },
      body: JSON.stringify({ workflow: long.name, input: { log: [] } })
    })
    return { status: response.status, body: await response.json() as { error?: string; message?: string } }
  })

describe("BatonHttp and the tenant quota", () => {
  it.effect("a start over the quota with onOverQuota fail is 429 naming TenantQuotaExceededError; nothing more starts", () =>
    Effect.gen(function*() {
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const first = yield* start(port)
      assert.strictEqual(first.status, 202)
      const over = yield* start(port)
      assert.deepStrictEqual([over.status, over.body.error], [429, "TenantQuotaExceededError"])
      assert.include(over.body.message, "Retry later")
      const page = yield* (yield* Baton.Baton).list({ tenantId: "acme" })
      assert.strictEqual(page.executions.length, 1)
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [long], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [long], tenantQuota: 1, onOverQuota: "fail" })),
        Layer.provide(MemoryStores.layer)
      )
    )))
})
