/**
 * BatonHttp's `GET /threads/:threadId/stream` through a real Node server on
 * an ephemeral 127.0.0.1 port: server-sent events of the thread's live
 * output, resumed after `Last-Event-ID` with no repeat and no gap; another
 * tenant's thread is 404, a bad id 400, no caller 401.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { HttpServer } from "effect/http"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const wf = approval(makeSideEffects())

const authorize: BatonHttp.Authorize = (request) =>
  typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined

interface Sse {
  readonly id: string
  readonly event: string
  readonly data: any
}

/** The SSE events of one response, read to its end. */
const events = (port: number, path: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
    const text = await response.text()
    const parsed: Array<Sse> = response.status !== 200 ? [] : text.split("\n\n").flatMap((block) => {
      const lines = block.split("\n").filter((l) => !l.startsWith(":") && l.length > 0)
      if (lines.length === 0) return []
      const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? ""
      return [{ id: field("id"), event: field("event"), data: JSON.parse(field("data")) }]
    })
    return { status: response.status, type: response.headers.get("content-type"), events: parsed, text }
  })

describe("BatonHttp's live output (SSE)", () => {
  it.live("GET /threads/:threadId/stream: every event as SSE; a reconnect after Last-Event-ID gets the rest; other tenants 404, bad ids 400, no caller 401", () =>
    Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const port = BatonHttp.port(yield* HttpServer.HttpServer)
      const paused = yield* baton.execute(wf, { log: [] }, { tenantId: "acme", threadId: "t-1" })
      assert.strictEqual(paused._tag, "Paused")
      const acme = { "x-tenant": "acme" }
      const first = yield* events(port, "/threads/t-1/stream?until=rest", acme)
      assert.strictEqual(first.status, 200)
      assert.match(first.type ?? "", /^text\/event-stream/)
      assert.deepStrictEqual(first.events.map((e) => e.event), ["status", "values", "updates", "values", "updates", "values", "status"])
      assert.deepStrictEqual(first.events.filter((e) => e.event === "status").map((e) => e.data.data.status), ["Running", "Paused"])
      assert.isTrue(first.events.every((e) => e.id === String(e.data.id) && e.data.threadId === "t-1" && e.data.tenantId === "acme"))
      // A follower that reads on while the pause is answered; a reconnect from the second event.
      const follower = yield* Effect.forkChild(events(port, "/threads/t-1/stream?until=end", { ...acme, "last-event-id": first.events[1]!.id }))
      yield* baton.resume({ tenantId: "acme", pauseId: paused._tag === "Paused" ? paused.pauses[0]!.pauseId : "", decision: "yes" })
      const rest = yield* Fiber.join(follower)
      assert.deepStrictEqual(rest.events.slice(0, first.events.length - 2).map((e) => e.id), first.events.slice(2).map((e) => e.id), "after the given id, no repeat, no gap")
      assert.deepStrictEqual(rest.events.filter((e) => e.event === "status").map((e) => e.data.data.status), ["Paused", "Running", "Finished"])
      assert.deepStrictEqual(rest.events.filter((e) => e.event === "updates").map((e) => Object.keys(e.data.data)[0]).slice(-2), ["approve", "send"])
      const byQuery = yield* events(port, `/threads/t-1/stream?until=end&lastEventId=${rest.events[rest.events.length - 2]!.id}`, acme)
      assert.deepStrictEqual(byQuery.events.map((e) => e.id), [rest.events[rest.events.length - 1]!.id], "?lastEventId works as the header does")
      assert.strictEqual((yield* events(port, "/threads/t-1/stream", { "x-tenant": "other" })).status, 404)
      assert.strictEqual((yield* events(port, "/threads/t-1/stream", { ...acme, "last-event-id": "-3" })).status, 400)
      assert.strictEqual((yield* events(port, "/threads/t-1/stream?until=never", acme)).status, 400)
      assert.strictEqual((yield* events(port, "/threads/t-1/stream", {})).status, 401)
    }).pipe(Effect.provide(
      BatonHttp.layerServer({ workflows: [wf], authorize, port: 0 }).pipe(
        Layer.provideMerge(Baton.layer({ workflows: [wf], liveOutput: true })),
        Layer.provide(MemoryStores.layer)
      )
    )))
})
