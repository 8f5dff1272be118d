/**
 * HTTP endpoints for one baton instance, on effect's HTTP server: health
 * probes for a load balancer or an orchestrator, Prometheus metrics, and
 * tenant-scoped control routes (start, status, list, pending pauses, resume,
 * cancel) over the `Baton` service of the app.
 *
 * **No authentication of its own.** Every control route first calls the
 * `authorize` hook the app must give: it maps a request (its headers, its
 * mTLS identity, a session, a verified token…) to the `{ tenantId, ownerId }`
 * the call acts for, or refuses it. A request it answers `undefined` for is
 * refused with 401 before anything is read or written. The probes and
 * `/metrics` carry no tenant data and are not authorized: mount them on a
 * port only the infrastructure reaches if that matters.
 *
 * Routes (under `prefix`, default none):
 *
 * | method | path | answers |
 * |---|---|---|
 * | GET | /livez | 200 or 503, the liveness report |
 * | GET | /readyz | 200 or 503, the readiness report (one ping per store) |
 * | GET | /metrics | Prometheus text of the current `MetricRegistry` |
 * | POST | /executions | `{ workflow, input, threadId?, requestKey?, concurrencyKey?, debounce? }` → 202, the handle |
 * | GET | /executions | `?status&workflow&threadId&limit&cursor` → a page |
 * | GET | /executions/:executionId | its status view |
 * | GET | /threads/:threadId/pauses | its pending pauses |
 * | POST | /pauses/:pauseId/resume | `{ decision, requestKey? }` or `{ reply }` → the output once it rests |
 * | POST | /threads/:threadId/cancel | `{ cancelled }` |
 * | POST | /threads/:threadId/signals/:name | `{ payload }` → the signal kept: `{ tenantId, threadId, executionId, name, seq }` |
 * | GET | /threads/:threadId/history | `{ threadId, executions }`: the thread's executions, oldest first, each with its `history` snapshot (steps, pauses) once ended |
 * | GET | /threads/:threadId/checkpoints | `?ns&limit&cursor` → `{ checkpoints, next }`: the thread's state history, newest first |
 * | GET | /threads/:threadId/stream | `text/event-stream`: the thread's live output (`Baton.stream`), resumed after `Last-Event-ID`; `?until=end\|rest` |
 * | GET | /openapi.json | the OpenAPI 3.1 document of these routes (not authorized: it holds no tenant data) |
 *
 * When the app provides the `Schedules` service (`Schedules.layer`), the schedule routes too:
 * `POST /schedules` (`ScheduleBody` → 201), `GET /schedules` (`?limit&cursor`), `GET /schedules/:scheduleId`,
 * `POST /schedules/:scheduleId/pause`, `POST /schedules/:scheduleId/resume`, `DELETE /schedules/:scheduleId`.
 *
 * A request body over `maxBodyBytes` (default 1 MiB) is 413, and nothing is written.
 *
 * A body that does not decode is 400 with each issue's path, and nothing is
 * written. Errors answer `{ error: _tag, message }` with a status that says
 * what to do (404 unknown, 403 another owner, 409 busy / already answered, 429 over the tenant quota,
 * 503 stopping or a store failing transiently).
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ByteSize, Cause, type Duration, Effect, Layer, Schema, SchemaIssue } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { createServer } from "node:http"
import * as Baton from "../runtime/Baton.ts"
import type { HealthReport } from "../runtime/Health.ts"
import type { AnyWorkflow } from "../runtime/Workflow.ts"
import { BatonConfigError } from "../stores/Errors.ts"
import { ExecutionHistoryStore, type ExecutionSnapshot } from "../stores/ExecutionHistoryStore.ts"
import type { ExecutionStatus } from "../stores/ExecutionRecord.ts"
import * as OpenApiDocument from "./internal/openApi.ts"
import * as ScheduleRoutes from "./internal/scheduleRoutes.ts"
import { Schedules } from "../runtime/Schedules.ts"
import * as Statuses from "./internal/statuses.ts"
import * as Sse from "./internal/sse.ts"
import * as Dashboard from "./internal/dashboard.ts"
import { fieldsOf, refuseUnknown, setting, text, unknownField, whole } from "../stores/internal/options.ts"
import * as V from "../stores/internal/validate.ts"

/**
 * Who a request acts for: every control call is scoped to this tenant and checked against this owner.
 *
 * @category models
 * @since 0.1.0
 */
export interface Caller {
  readonly tenantId: string
  readonly ownerId?: string | undefined
  /**
   * The tenants the dashboard may show this caller (an operator's), `tenantId`
   * among them; default: `tenantId` alone. The control routes act for
   * `tenantId` only.
   *
   * @since 0.1.0
   */
  readonly tenantIds?: ReadonlyArray<string> | undefined
}

/**
 * The app's hook: the caller a request acts for, or `undefined` to refuse it
 * (401). It may answer the caller itself, a `Promise` of it (an `async`
 * function: a token checked with a JWT library) or an `Effect` of it. A hook
 * that throws, rejects or fails answers 401 too, with nothing read or written.
 *
 * @example
 * ```ts
 * import { BatonHttp } from "baton/http"
 * import { jwtVerify } from "jose"
 *
 * const secret = new TextEncoder().encode(process.env.JWT_SECRET)
 * // A bearer token signed with the app's key names the tenant (claim "tenant") and the owner (subject).
 * const authorize: BatonHttp.Authorize = async (request) => {
 *   const token = /^Bearer (.+)$/.exec(request.headers["authorization"] ?? "")?.[1]
 *   if (token === undefined) return undefined
 *   const { payload } = await jwtVerify(token, secret, { issuer: "https://auth.example.com", audience: "baton" })
 *   return typeof payload.tenant === "string" ? { tenantId: payload.tenant, ownerId: payload.sub } : undefined
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type Authorize = (
  request: HttpServerRequest.HttpServerRequest
) => Caller | undefined | PromiseLike<Caller | undefined> | Effect.Effect<Caller | undefined, unknown>

/**
 * The default limit of a request body: 1 MiB.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultMaxBodyBytes = 1024 * 1024

/**
 * What `BatonHttp.layer` needs.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The workflows `POST /executions` may start, by name (usually those given to the `Baton` Layer). */
  readonly workflows: ReadonlyArray<AnyWorkflow>
  /** Required: maps a request to its tenant and owner, or refuses it. There is no default. */
  readonly authorize: Authorize
  /** A path prefix for every route, e.g. "/baton" (default: none). */
  readonly prefix?: string | undefined
  /**
   * The largest request body, in bytes: a larger one is answered 413 with
   * nothing read past the limit and nothing written. A whole number from 1
   * to 256 MiB; default 1 MiB. (`Baton`'s own `maxInputBytes` limits the
   * input or decision a call hands the runtime, through any API.)
   */
  readonly maxBodyBytes?: number | undefined
  /**
   * Serve the dashboard under `<prefix>/dashboard` (default: off): the same
   * `authorize` hook guards it. `csrfSecret` makes its CSRF tokens (default:
   * random per process — give every instance behind one address the same
   * secret, at least 32 characters).
   *
   * @since 0.1.0
   */
  readonly dashboard?: boolean | { readonly csrfSecret?: string | undefined } | undefined
}

/**
 * The body of `POST /executions`.
 *
 * @category schemas
 * @since 0.1.0
 */
export const StartBody = Schema.Struct({
  workflow: Schema.String,
  input: Schema.Json,
  threadId: Schema.optional(Schema.String),
  /** Safe to retry: every POST with this key (per tenant) starts or follows one execution (see `Baton.start`). */
  requestKey: Schema.optional(Schema.String),
  /** At most `limit` executions of `key` (per tenant) run at once, fleet-wide; the others wait in arrival order (see `Baton.start`). */
  concurrencyKey: Schema.optional(Schema.Struct({ key: Schema.String, limit: Schema.Number })),
  /** A burst of POSTs with this key becomes one execution with the last input, `window` (milliseconds, or text such as "5 seconds") after the last one (see `Baton.start`). */
  debounce: Schema.optional(Schema.Struct({
    key: Schema.String,
    window: Schema.Union([Schema.Number, Schema.String]),
    maxWait: Schema.optional(Schema.Union([Schema.Number, Schema.String]))
  }))
})

/**
 * The body of `POST /pauses/:pauseId/resume`.
 *
 * @category schemas
 * @since 0.1.0
 */
export const ResumeBody = Schema.Union([
  Schema.Struct({
    decision: Schema.Json,
    /** Safe to retry: the decision is recorded once per key (see `Baton.resume`). */
    requestKey: Schema.optional(Schema.String)
  }),
  /** A free-text reply, read by the workflow's interpreter (see `Workflow.Interpreter`). */
  Schema.Struct({ reply: Schema.String })
])

/**
 * The body of `POST /threads/:threadId/signals/:name`.
 *
 * @category schemas
 * @since 0.1.0
 */
export const SignalBody = Schema.Struct({
  /** The signal's payload, JSON: checked by the schema the workflow declares for the signal (see `Baton.signal`). */
  payload: Schema.Json
})

const statuses: ReadonlyArray<ExecutionStatus> = ["Running", "Paused", "Finished", "Failed", "Cancelled"]
const activeStatuses: ReadonlyArray<ExecutionStatus> = ["Running", "Paused"]

/** The most executions the history route lists for one thread. */
const maxHistoryExecutions = 10_000

/**
 * The HTTP status an error of the runtime answers with (one table over the
 * calls' error unions; 500 for anything else).
 *
 * @category errors
 * @since 0.1.0
 */
export const statusOf: (error: { readonly _tag: string; readonly isRetryable?: boolean }) => number = Statuses.statusOf

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

const errorResponse = (error: unknown) => {
  const e = error as { readonly _tag?: string; readonly message?: string; readonly isRetryable?: boolean }
  const tag = typeof e?._tag === "string" ? e._tag : "InternalError"
  return json({ error: tag, message: e?.message ?? String(error) }, statusOf({ _tag: tag, isRetryable: e?.isRetryable }))
}

const healthResponse = (report: HealthReport) => json(report, report.status === "Unhealthy" ? 503 : 200)

const tooLarge = (limit: number) =>
  json({ error: "BodyTooLarge", message: `the request body is over the limit of ${limit} bytes (the maxBodyBytes option); nothing was written` }, 413)

/**
 * Decodes the request's JSON body with `schema`, reading at most `limit` bytes: a larger body
 * (by its content-length, before anything is read, or as it is read) is 413; a body that does
 * not decode is 400 with each issue's path.
 */
const body = <S extends Schema.Codec<any, any, never, never>>(schema: S, limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > limit) return yield* Effect.fail(tooLarge(limit))
    return yield* HttpServerRequest.schemaBodyJson(schema)
  }).pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(BigInt(limit))),
    Effect.mapError((e) => {
      if (HttpServerResponse.isHttpServerResponse(e)) return e
      if (e._tag === "HttpServerError" && e.reason._tag === "RequestParseError" && e.reason.reason === "BodyTooLarge") return tooLarge(limit)
      if (Schema.isSchemaError(e)) {
        const issues = SchemaIssue.makeFormatterStandardSchemaV1()(e.issue).issues.map((i) => ({
          path: (i.path ?? []).map((p) => (typeof p === "object" && p !== null && "key" in p ? p.key : p)) as ReadonlyArray<PropertyKey>,
          message: i.message
        }))
        return json({ error: "InvalidBody", message: "the request body does not match its schema; nothing was written", issues }, 400)
      }
      return json({ error: "InvalidBody", message: `the request body is not JSON: ${e.message}` }, 400)
    })
  )

const param = (name: string) => Effect.map(HttpRouter.params, (p) => p[name] ?? "")

/** The fields of `Options`: anything else (a misspelt `prefx`) is refused at build, naming it. */
const optionFields = fieldsOf<Options>({ workflows: true, authorize: true, prefix: true, maxBodyBytes: true, dashboard: true })

/** The largest `maxBodyBytes`: 256 MiB. */
const maxMaxBodyBytes = 256 * 1024 * 1024

/** The caller the app's hook answers, whichever form it answers in (a value, a Promise, an Effect); a throw, a rejection or a failure is no caller. */
const callerOf = (authorize: Authorize, request: HttpServerRequest.HttpServerRequest): Effect.Effect<Caller | undefined> =>
  Effect.suspend(() => {
    const answer = authorize(request)
    if (Effect.isEffect(answer)) return answer as Effect.Effect<Caller | undefined, unknown>
    if (answer !== null && typeof answer === "object" && typeof (answer as PromiseLike<unknown>).then === "function") {
      return Effect.tryPromise(() => Promise.resolve(answer as PromiseLike<Caller | undefined>))
    }
    return Effect.succeed(answer as Caller | undefined)
  }).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.interrupt
        : Effect.as(Effect.logWarning("baton/http: the authorize hook failed; the request is refused (401)", cause), undefined)
    )
  )

/** Options that cannot work fail the Layer's build, naming the field: there is no default tenant hook. */
const check = (options: Options) => {
  const refuse = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))
  const unknown = unknownField(options, optionFields)
  if (unknown !== undefined) return Effect.fail(unknown)
  if (typeof options?.authorize !== "function") {
    return refuse("authorize", "is required: a function mapping a request to { tenantId, ownerId }, or undefined to refuse it (BatonHttp has no authentication of its own)")
  }
  if (!Array.isArray(options.workflows)) return refuse("workflows", "must be the array of workflows POST /executions may start")
  const limit = options.maxBodyBytes
  if (limit !== undefined && !(typeof limit === "number" && Number.isSafeInteger(limit) && limit >= 1 && limit <= maxMaxBodyBytes)) {
    return refuse("maxBodyBytes", `must be a whole number of bytes from 1 to ${maxMaxBodyBytes} (256 MiB) (got ${V.shown(limit)})`)
  }
  const dashboard = options.dashboard
  if (dashboard !== undefined && typeof dashboard !== "boolean") {
    const secret = typeof dashboard === "object" && dashboard !== null ? dashboard.csrfSecret : undefined
    if (typeof dashboard !== "object" || dashboard === null || (secret !== undefined && (typeof secret !== "string" || secret.length < 32))) {
      return refuse("dashboard", "must be true, false or { csrfSecret } with a secret of at least 32 characters")
    }
  }
  if (options.prefix !== undefined && !/^\/[^?#]*[^/]$/.test(options.prefix)) {
    return refuse("prefix", `must start with "/" and not end with one (got ${JSON.stringify(options.prefix)})`)
  }
  return Effect.void
}

/** The routes, added to the `HttpRouter` in context. */
const routes = (options: Options) =>
  Effect.gen(function*() {
    yield* check(options)
    const router = yield* HttpRouter.HttpRouter
    const baton = yield* Baton.Baton
    const prefix = options.prefix ?? ""
    const limit = options.maxBodyBytes ?? defaultMaxBodyBytes
    const byName = new Map(options.workflows.map((w) => [w.name, w]))
    /** A control route: the caller first (refused without one), then `f`; a failure answers its error. */
    const control = <E, R>(f: (caller: Caller, request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const caller = yield* callerOf(options.authorize, request)
        if (caller === undefined || typeof caller.tenantId !== "string" || caller.tenantId.length === 0) {
          return json({ error: "Unauthorized", message: "the app's authorize hook found no tenant for this request" }, 401)
        }
        return yield* f(caller, request).pipe(
          Effect.catch((e): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
            Effect.succeed(HttpServerResponse.isHttpServerResponse(e) ? e : errorResponse(e))
          )
        )
      })
    const scope = (caller: Caller) => ({ tenantId: caller.tenantId, ownerId: caller.ownerId })

    yield* router.add("GET", `${prefix}/livez` as HttpRouter.PathInput, Effect.map(baton.checkLiveness, healthResponse))
    yield* router.add("GET", `${prefix}/readyz` as HttpRouter.PathInput, Effect.map(baton.checkReadiness, healthResponse))
    yield* router.add(
      "GET",
      `${prefix}/metrics` as HttpRouter.PathInput,
      Effect.map(PrometheusMetrics.format(), (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
    )
    yield* router.add("POST", `${prefix}/executions` as HttpRouter.PathInput, control((caller) =>
      Effect.gen(function*() {
        const start = yield* body(StartBody, limit)
        const workflow = byName.get(start.workflow)
        if (workflow === undefined) {
          return json({ error: "UnknownWorkflowError", message: `no workflow "${start.workflow}" is served here`, known: [...byName.keys()] }, 400)
        }
        const handle = yield* baton.start(workflow, start.input, {
          ...scope(caller),
          threadId: start.threadId,
          requestKey: start.requestKey,
          concurrencyKey: start.concurrencyKey,
          debounce: start.debounce === undefined ? undefined : {
            key: start.debounce.key,
            window: start.debounce.window as Duration.Input,
            ...(start.debounce.maxWait === undefined ? {} : { maxWait: start.debounce.maxWait as Duration.Input })
          }
        })
        return json({ executionId: handle.executionId, rootExecutionId: handle.rootExecutionId, threadId: handle.threadId, tenantId: handle.tenantId }, 202)
      })
    ))
    yield* router.add("GET", `${prefix}/executions` as HttpRouter.PathInput, control((caller, request) =>
      Effect.gen(function*() {
        const query = new URL(request.url, "http://localhost").searchParams
        const status = query.get("status") ?? undefined
        if (status !== undefined && !statuses.includes(status as ExecutionStatus)) {
          return json({ error: "InvalidInputError", message: `status must be one of ${statuses.join(", ")}`, issues: [{ path: ["status"], message: `got ${status}` }] }, 400)
        }
        const limit = query.get("limit")
        const page = yield* baton.list({
          ...scope(caller),
          status: status as ExecutionStatus | undefined,
          workflow: query.get("workflow") ?? undefined,
          threadId: query.get("threadId") ?? undefined,
          cursor: query.get("cursor") ?? undefined,
          limit: limit === null ? undefined : Number(limit)
        })
        return json(page)
      })
    ))
    yield* router.add("GET", `${prefix}/executions/:executionId` as HttpRouter.PathInput, control((caller) =>
      Effect.flatMap(param("executionId"), (id) => Effect.map(baton.status(id, scope(caller)), (view) => json(view)))
    ))
    yield* router.add("GET", `${prefix}/threads/:threadId/pauses` as HttpRouter.PathInput, control((caller) =>
      Effect.flatMap(param("threadId"), (threadId) =>
        Effect.map(baton.pendingPauses({ ...scope(caller), threadId }), (pauses) => json({ pauses })))
    ))
    yield* router.add("POST", `${prefix}/pauses/:pauseId/resume` as HttpRouter.PathInput, control((caller) =>
      Effect.gen(function*() {
        const pauseId = yield* param("pauseId")
        const given = yield* body(ResumeBody, limit)
        return json(yield* baton.resume("reply" in given
          ? { ...scope(caller), pauseId, reply: given.reply }
          : { ...scope(caller), pauseId, decision: given.decision, requestKey: given.requestKey }))
      })
    ))
    const schedules = yield* Effect.serviceOption(Schedules)
    const scheduleBody = schedules._tag === "Some" ? ScheduleRoutes.ScheduleBody : undefined
    const openApi = OpenApiDocument.document({ prefix, startBody: StartBody, resumeBody: ResumeBody, maxBodyBytes: limit, signalBody: SignalBody, scheduleBody })
    yield* router.add("GET", `${prefix}/openapi.json` as HttpRouter.PathInput, Effect.succeed(json(openApi)))
    const history = yield* Effect.serviceOption(ExecutionHistoryStore)
    yield* router.add("GET", `${prefix}/threads/:threadId/history` as HttpRouter.PathInput, control((caller) =>
      Effect.gen(function*() {
        const threadId = yield* param("threadId")
        const executions: Array<Baton.ExecutionSummary> = []
        let cursor: string | undefined
        do {
          const page = yield* baton.list({ ...scope(caller), threadId, cursor, limit: 1000 })
          executions.push(...page.executions)
          cursor = page.next ?? undefined
        } while (cursor !== undefined && executions.length < maxHistoryExecutions)
        if (executions.length === 0) {
          return json({ error: "UnknownThreadError", message: `no execution of thread "${threadId}" in tenant "${caller.tenantId}"` }, 404)
        }
        executions.sort((a, b) => a.createdAt - b.createdAt || (a.executionId < b.executionId ? -1 : 1))
        const withHistory = yield* Effect.forEach(executions, (e) =>
          Effect.map(
            history._tag === "Some" && !activeStatuses.includes(e.status)
              ? Effect.map(history.value.get(caller.tenantId, e.executionId), (o) => (o._tag === "Some" ? o.value : null))
              : Effect.succeed<ExecutionSnapshot | null>(null),
            (snapshot) => ({ ...e, history: snapshot === null ? null : { steps: snapshot.steps, pauses: snapshot.pauses, endedAt: snapshot.endedAt } })
          ), { concurrency: 8 })
        return json({ threadId, executions: withHistory })
      })
    ))
    yield* router.add("POST", `${prefix}/threads/:threadId/cancel` as HttpRouter.PathInput, control((caller) =>
      Effect.flatMap(param("threadId"), (threadId) => Effect.map(baton.cancel(threadId, scope(caller)), (r) => json(r))))
    )
    yield* router.add("POST", `${prefix}/threads/:threadId/signals/:name` as HttpRouter.PathInput, control((caller) =>
      Effect.gen(function*() {
        const threadId = yield* param("threadId")
        const name = yield* param("name")
        const { payload } = yield* body(SignalBody, limit)
        return json(yield* baton.signal(threadId, name, payload, scope(caller)))
      })
    ))
    if (schedules._tag === "Some") {
      yield* ScheduleRoutes.add({ router, prefix, control, body: (schema) => body(schema, limit), byName, schedules: schedules.value })
    }
    yield* router.add("GET", `${prefix}/threads/:threadId/checkpoints` as HttpRouter.PathInput, control((caller, request) =>
      Effect.gen(function*() {
        const threadId = yield* param("threadId")
        const query = new URL(request.url, "http://localhost").searchParams
        const limit = query.get("limit")
        const page = yield* baton.checkpoints(threadId, {
          ...scope(caller),
          checkpointNs: query.get("ns") ?? undefined,
          cursor: query.get("cursor") ?? undefined,
          limit: limit === null ? undefined : Number(limit)
        })
        return json(page)
      })
    ))
    yield* router.add("GET", `${prefix}/threads/:threadId/stream` as HttpRouter.PathInput, control((caller, request) =>
      Effect.flatMap(param("threadId"), (threadId) => Sse.response(baton, threadId, scope(caller), request)))
    )
    if (options.dashboard !== undefined && options.dashboard !== false) {
      yield* Dashboard.routes({
        router,
        baton,
        prefix,
        control,
        workflows: byName,
        secret: typeof options.dashboard === "object" ? options.dashboard.csrfSecret : undefined
      })
    }
  })

/**
 * The routes, added to the app's `HttpRouter` (serve it with `HttpRouter.serve`, or use `layerServer`).
 * Without an `authorize` function (or with a bad `workflows` or `prefix`) the build fails with
 * `BatonConfigError` naming the field.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<never, BatonConfigError, HttpRouter.HttpRouter | Baton.Baton> =>
  Layer.effectDiscard(routes(options))

/** Why the server could not listen on `host:port`, as a `BatonConfigError` on the field to change. */
const listenRefusal = (host: string, port: number, cause: unknown): BatonConfigError => {
  const code = (cause as { readonly code?: unknown } | undefined)?.code
  const detail = cause instanceof Error ? cause.message : String(cause)
  const at = `${host}:${port}`
  switch (code) {
    case "EADDRINUSE":
      return new BatonConfigError({
        field: "port",
        reason: `is ${port}, but ${at} is already in use (${code}): stop what listens there, or choose another port (0: any free one)`
      })
    case "EACCES":
      return new BatonConfigError({ field: "port", reason: `is ${port}, but listening on ${at} is not permitted (${code}): choose a port above 1023, or grant the process the right` })
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return new BatonConfigError({ field: "host", reason: `is "${host}", which is not an address of this machine (${code}): listen on 127.0.0.1, 0.0.0.0 or one of its addresses` })
    default:
      return new BatonConfigError({ field: "port", reason: `is ${port}, but the server could not listen on ${at}: ${detail}` })
  }
}

/** A port a server can listen on: a whole number from 0 to 65535 (0: any free one); required. */
const checkPort = (port: unknown) => setting("port", port ?? Number.NaN, whole({ min: 0, max: 65535, why: "0: any free one" }), 0)

/** A host name or address: 1 to 253 characters (the longest DNS name). */
const checkHost = (host: unknown) => setting("host", host, text({ minLength: 1, maxLength: 253, why: "the longest host name" }), "127.0.0.1")

/**
 * What `layerServer` takes: the routes' options, and where to listen.
 *
 * @category models
 * @since 0.1.0
 */
export interface ServerOptions extends Options {
  /** The TCP port, a whole number from 0 to 65535; 0 takes any free one (read it with `port`). */
  readonly port: number
  /**
   * The address to listen on. Default "127.0.0.1": only this machine reaches
   * the server. Give "0.0.0.0" (or "::") to listen on every interface — behind
   * your own TLS and network rules — or one of the machine's addresses.
   */
  readonly host?: string | undefined
}

/**
 * A Node HTTP server with the routes, listening on `host:port` (port 0: any
 * free one; read it with `port`). Default host 127.0.0.1 (see
 * `ServerOptions.host`). Once listening it logs the address, at Info:
 * `baton/http: listening on http://127.0.0.1:8080`. A port that cannot be
 * listened on — already in use, not permitted — fails the build with
 * `BatonConfigError` naming `host:port` and why.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerServer = (options: ServerOptions) => {
  const { host: givenHost, port, ...routeOptions } = options ?? ({} as typeof options)
  const host = givenHost ?? "127.0.0.1"
  // Built in the Layer's scope (the server closes with it); a failure to listen says where and why.
  const server = Layer.effectContext(Effect.andThen(
    Effect.andThen(refuseUnknown(options, [...optionFields, "port", "host"]), Effect.andThen(checkPort(port), checkHost(givenHost))),
    Layer.build(NodeHttpServer.layer(() => createServer(), { port, host })).pipe(
      Effect.catchTag("ServeError", (e) => Effect.fail(listenRefusal(host, port, e.cause)))
    )
  ))
  const logAddress = Layer.effectDiscard(HttpServer.addressFormattedWith((address) => Effect.logInfo(`baton/http: listening on ${address}`)))
  return Layer.mergeAll(HttpRouter.serve(layer(routeOptions), { disableListenLog: true, disableLogger: true }), logAddress).pipe(
    Layer.provideMerge(server)
  )
}

/**
 * The port a server built with `layerServer` listens on.
 *
 * @category accessors
 * @since 0.1.0
 */
export const port = (server: HttpServer.HttpServer["Service"]): number =>
  "port" in server.address ? server.address.port : 0

