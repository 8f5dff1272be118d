/**
 * BatonHttp's edges through a real Node server on an ephemeral 127.0.0.1
 * port: an `authorize` hook may answer a value, a Promise or an Effect (and
 * one that throws refuses the request); a worked bearer-token hook with a
 * real JWT library (`jose`); the address the server logs; bodies over the
 * limit (by content-length and as a chunked stream) answered 413 with
 * nothing written; and the same limit on the input and decision the `Baton`
 * API takes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { HttpServer } from "effect/http"
import { SignJWT, jwtVerify } from "jose"
import { MemoryStores } from "../../layers/memory/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, StoreErrors } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"

const wf = approval(makeSideEffects())

const serveWith = (options: Omit<BatonHttp.ServerOptions, "workflows" | "port">) =>
  BatonHttp.layerServer({ workflows: [wf], port: 0, ...options }).pipe(
    Layer.provideMerge(Baton.layer({ workflows: [wf] })),
    Layer.provide(MemoryStores.layer)
  )

type Body = string | ReadableStream<Uint8Array>

/** A real HTTP round trip: status and parsed JSON (or text). */
const call = (port: number, method: string, path: string, options: { body?: Body; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...options.headers },
      ...(options.body === undefined ? {} : { body: options.body, duplex: "half" } as RequestInit)
    })
    const text = await response.text()
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {}
    return { status: response.status, body }
  })

const withServer = <A, E>(options: Omit<BatonHttp.ServerOptions, "workflows" | "port">, f: (port: number) => Effect.Effect<A, E, Baton.Baton>) =>
  Effect.gen(function*() {
    return yield* f(BatonHttp.port(yield* HttpServer.HttpServer))
  }).pipe(Effect.provide(serveWith(options)))

const start = (port: number, headers: Record<string, string>, threadId?: string) =>
  call(port, "POST", "/executions", { headers, body: JSON.stringify({ workflow: "approval", input: { log: [] }, threadId }) })

/** A tenant from the x-tenant header, in the three forms a hook may answer in. */
const fromHeader = (request: { readonly headers: Record<string, string | undefined> }) =>
  typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined

describe("BatonHttp's authorize hook", () => {
  for (
    const [form, authorize] of [
      ["a plain value", (request) => fromHeader(request)],
      ["a Promise (an async function)", async (request) => fromHeader(request)],
      ["an Effect", (request) => Effect.succeed(fromHeader(request))]
    ] as const satisfies ReadonlyArray<readonly [string, BatonHttp.Authorize]>
  ) {
    it.effect(`may answer ${form}: its caller is served, its undefined is 401`, () =>
      withServer({ authorize }, (port) =>
        Effect.gen(function*() {
          const started = yield* start(port, { "x-tenant": "acme" })
          assert.strictEqual(started.status, 202, JSON.stringify(started.body))
          assert.strictEqual(started.body.tenantId, "acme")
          const refused = yield* start(port, {})
          assert.strictEqual(refused.status, 401)
          assert.strictEqual(refused.body.error, "Unauthorized")
        })))
  }

  it.effect("a hook that throws, rejects or fails refuses the request (401), and nothing is written", () =>
    Effect.gen(function*() {
      for (
        const authorize of [
          () => {
            throw new Error("no key")
          },
          async () => Promise.reject(new Error("no key")),
          () => Effect.fail(new Error("no key"))
        ] satisfies ReadonlyArray<BatonHttp.Authorize>
      ) {
        yield* withServer({ authorize }, (port) =>
          Effect.gen(function*() {
            const refused = yield* start(port, { "x-tenant": "acme" })
            assert.strictEqual(refused.status, 401)
            const baton = yield* Baton.Baton
            assert.deepStrictEqual((yield* baton.list({ tenantId: "acme" })).executions, [])
          }))
      }
    }))

  it.effect("a worked example: a bearer token (HS256 JWT) checked with jose names the tenant and the owner", () =>
    Effect.gen(function*() {
      const secret = new TextEncoder().encode("a secret of at least 32 bytes, for HS256!")
      // The app's hook: the token's "tenant" claim is the tenant, its subject the owner; a bad token is refused.
      const authorize: BatonHttp.Authorize = async (request) => {
        const token = /^Bearer (.+)$/.exec(request.headers["authorization"] ?? "")?.[1]
        if (token === undefined) return undefined
        const { payload } = await jwtVerify(token, secret, { issuer: "https://auth.example.com", audience: "baton" })
        return typeof payload["tenant"] === "string" ? { tenantId: payload["tenant"], ownerId: payload.sub } : undefined
      }
      const sign = (claims: Record<string, string>, key = secret) =>
        Effect.promise(() =>
          new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setIssuer("https://auth.example.com")
            .setAudience("baton").setIssuedAt().setExpirationTime("5m").sign(key)
        )
      yield* withServer({ authorize }, (port) =>
        Effect.gen(function*() {
          const good = yield* sign({ tenant: "acme" })
          const started = yield* start(port, { authorization: `Bearer ${good}` }, "jwt-thread")
          assert.strictEqual(started.status, 202, JSON.stringify(started.body))
          assert.strictEqual(started.body.tenantId, "acme")
          const baton = yield* Baton.Baton
          // The thread is alice's (the token's subject): another owner is refused.
          yield* baton.status(started.body.executionId, { tenantId: "acme", ownerId: "alice" })
          const other = yield* baton.status(started.body.executionId, { tenantId: "acme", ownerId: "bob" }).pipe(Effect.flip)
          assert.strictEqual(other._tag, "ThreadOwnerError")
          const forged = yield* sign({ tenant: "acme" }, new TextEncoder().encode("another key, also 32 bytes long!!"))
          assert.strictEqual((yield* start(port, { authorization: `Bearer ${forged}` })).status, 401)
          assert.strictEqual((yield* start(port, { authorization: "Bearer not-a-jwt" })).status, 401)
          assert.strictEqual((yield* start(port, {})).status, 401)
        }))
    }))
})

describe("BatonHttp's server", () => {
  it.effect("logs the address it listens on", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ message }) => {
        lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
      })
      const port = yield* Effect.map(HttpServer.HttpServer, BatonHttp.port).pipe(
        Effect.provide(serveWith({ authorize: fromHeader }).pipe(Layer.provide(Logger.layer([capture]))))
      )
      assert.include(lines, `baton/http: listening on http://127.0.0.1:${port}`)
    }))
})

describe("BatonHttp's body limit", () => {
  const tenant = { "x-tenant": "acme" }
  const bigInput = (bytes: number) => JSON.stringify({ workflow: "approval", input: { log: [], blob: "x".repeat(bytes) } })

  it.effect("a body over the default 1 MiB is 413 and nothing is written; one under it is served", () =>
    withServer({ authorize: fromHeader }, (port) =>
      Effect.gen(function*() {
        const over = yield* call(port, "POST", "/executions", { headers: tenant, body: bigInput(1024 * 1024 + 10) })
        assert.strictEqual(over.status, 413, JSON.stringify(over.body).slice(0, 200))
        assert.strictEqual(over.body.error, "BodyTooLarge")
        const baton = yield* Baton.Baton
        assert.deepStrictEqual((yield* baton.list({ tenantId: "acme" })).executions, [])
        const under = yield* call(port, "POST", "/executions", { headers: tenant, body: bigInput(1000) })
        assert.strictEqual(under.status, 202)
      })))

  it.effect("maxBodyBytes sets it: a chunked body (no content-length) over it is 413 too; a decision over it leaves the pause pending", () =>
    withServer({ authorize: fromHeader, maxBodyBytes: 4096 }, (port) =>
      Effect.gen(function*() {
        const chunks = [bigInput(3000), " ".repeat(3000)]
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            const next = chunks.shift()
            if (next === undefined) controller.close()
            else controller.enqueue(new TextEncoder().encode(next))
          }
        })
        const chunked = yield* call(port, "POST", "/executions", { headers: tenant, body: stream })
        assert.strictEqual(chunked.status, 413)
        const baton = yield* Baton.Baton
        assert.deepStrictEqual((yield* baton.list({ tenantId: "acme" })).executions, [])
        const started = yield* start(port, tenant, "limit-thread")
        assert.strictEqual(started.status, 202)
        yield* baton.await(started.body.executionId, { tenantId: "acme" })
        const [pause] = yield* baton.pendingPauses({ tenantId: "acme", threadId: "limit-thread" })
        const big = yield* call(port, "POST", `/pauses/${pause!.pauseId}/resume`, { headers: tenant, body: JSON.stringify({ decision: "y".repeat(5000) }) })
        assert.strictEqual(big.status, 413)
        assert.strictEqual((yield* baton.pendingPauses({ tenantId: "acme", threadId: "limit-thread" })).length, 1, "the pause is still pending")
      })))

  it.effect("a maxBodyBytes that cannot work fails the build, naming the field", () =>
    Effect.gen(function*() {
      for (const maxBodyBytes of [0, -1, 1.5, 2 ** 40, "1 MiB" as unknown as number]) {
        const error = yield* Layer.build(serveWith({ authorize: fromHeader, maxBodyBytes })).pipe(Effect.scoped, Effect.flip)
        assert.instanceOf(error, StoreErrors.BatonConfigError)
        assert.strictEqual((error as StoreErrors.BatonConfigError).field, "maxBodyBytes")
      }
    }))
})

describe("Baton's input limit (maxInputBytes)", () => {
  const withBaton = <A, E>(options: { readonly maxInputBytes?: number }, f: (baton: Baton.Baton["Service"]) => Effect.Effect<A, E>) =>
    Effect.flatMap(Baton.Baton, f).pipe(Effect.provide(Baton.layer({ workflows: [wf], ...options }).pipe(Layer.provide(MemoryStores.layer))))

  it.effect("an input or a decision over it is InvalidInputError naming the field, and nothing is written", () =>
    withBaton({ maxInputBytes: 2048 }, (baton) =>
      Effect.gen(function*() {
        const refused = yield* baton.execute(wf, { log: ["x".repeat(3000)] } as never, { threadId: "big" }).pipe(Effect.flip)
        assert.instanceOf(refused, StoreErrors.InvalidInputError)
        assert.strictEqual((refused as StoreErrors.InvalidInputError).field, "input")
        assert.match((refused as StoreErrors.InvalidInputError).message, /over the limit of 2048 bytes/)
        assert.deepStrictEqual((yield* baton.list()).executions, [])
        const paused = yield* baton.execute(wf, { log: [] } as never, { threadId: "small" })
        assert.strictEqual(paused._tag, "Paused")
        const pauseId = (paused as { pauses: ReadonlyArray<{ pauseId: string }> }).pauses[0]!.pauseId
        const tooBig = yield* baton.resume({ pauseId, decision: "y".repeat(3000) }).pipe(Effect.flip)
        assert.instanceOf(tooBig, StoreErrors.InvalidInputError)
        assert.strictEqual((tooBig as StoreErrors.InvalidInputError).field, "decision")
        assert.strictEqual((yield* baton.pendingPauses({ threadId: "small" })).length, 1, "the pause is still pending")
      })))

  it.effect("the default is 1 MiB", () =>
    withBaton({}, (baton) =>
      Effect.gen(function*() {
        const refused = yield* baton.execute(wf, { log: ["x".repeat(1024 * 1024)] } as never).pipe(Effect.flip)
        assert.strictEqual((refused as StoreErrors.InvalidInputError).field, "input")
        assert.match((refused as StoreErrors.InvalidInputError).message, /over the limit of 1048576 bytes/)
      })))

  it.effect("a maxInputBytes that cannot work fails the build, naming the field", () =>
    Effect.gen(function*() {
      for (const maxInputBytes of [0, 1.5, 2 ** 30, "big" as unknown as number]) {
        const error = yield* Layer.build(Baton.layer({ workflows: [wf], maxInputBytes }).pipe(Layer.provide(MemoryStores.layer))).pipe(Effect.scoped, Effect.flip)
        assert.instanceOf(error, StoreErrors.BatonConfigError)
        assert.strictEqual((error as StoreErrors.BatonConfigError).field, "maxInputBytes")
      }
    }))
})
