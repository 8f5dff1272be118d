/**
 * The dashboard's routes under `<prefix>/dashboard`: the page and its assets
 * (shipped in the package: `dashboardAssets.ts`), and the JSON and SSE the
 * page reads — every one behind the app's `authorize` hook, scoped to the
 * caller's tenants (`Caller.tenantIds`, else its `tenantId`) and owner.
 *
 * Mutations (answer a pause, cancel) need, besides the caller, a JSON body
 * (`content-type: application/json`, which a cross-site form cannot send
 * without a CORS preflight this server never grants), the header
 * `x-baton-csrf` holding the token the page was served with (an HMAC of the
 * caller under the dashboard's secret: another site can neither read nor
 * guess it), and, when the browser sends `Origin`, an origin whose host is the
 * request's `Host`. So a cookie the app's hook reads is never enough on its own.
 *
 * @since 0.1.0
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Clock, Duration, Effect, Option, Schema, Stream } from "effect"
import { type HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { BatonShape, ExecutionSummary } from "../../runtime/Baton.ts"
import * as Budget from "../../runtime/limits/Budget.ts"
import type { AnyWorkflow } from "../../runtime/Workflow.ts"
import { EventStore, type StreamEvent } from "../../stores/EventStore.ts"
import { ExecutionHistoryStore } from "../../stores/ExecutionHistoryStore.ts"
import type { ExecutionStatus } from "../../stores/ExecutionRecord.ts"
import { instanceOfHolder } from "../../stores/Lease.ts"
import { getManyChunked, LeaseStore } from "../../stores/LeaseStore.ts"
import { LedgerStore } from "../../stores/LedgerStore.ts"
import * as Assets from "./dashboardAssets.ts"
import * as Sse from "./sse.ts"

/**
 * Who the dashboard acts for: the tenants it may show, the owner it acts as.
 *
 * @category models
 * @since 0.1.0
 */
export interface DashboardCaller {
  readonly tenantId: string
  readonly tenantIds?: ReadonlyArray<string> | undefined
  readonly ownerId?: string | undefined
}

type Control = <E, R>(
  f: (caller: DashboardCaller, request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest>

/**
 * What the routes are built with.
 *
 * @category models
 * @since 0.1.0
 */
export interface DashboardContext {
  readonly router: HttpRouter.HttpRouter
  readonly baton: BatonShape
  readonly prefix: string
  readonly control: Control
  readonly workflows: ReadonlyMap<string, AnyWorkflow>
  /** The secret the CSRF tokens are made with (random per process when not given). */
  readonly secret?: string | undefined
}

const statuses: ReadonlyArray<ExecutionStatus> = ["Running", "Paused", "Finished", "Failed", "Cancelled"]

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store", ...headers } })

const invalid = (field: string, message: string) =>
  json({ error: "InvalidInputError", message: `${field} ${message}`, issues: [{ path: [field], message }] }, 400)

/** The tenants a caller may see. */
export const tenantsOf = (caller: DashboardCaller): ReadonlyArray<string> =>
  caller.tenantIds !== undefined && caller.tenantIds.length > 0 ? caller.tenantIds : [caller.tenantId]

/** The tenant a request names (`?tenant=`, or the path's), when the caller may see it; else undefined. */
const tenantFor = (caller: DashboardCaller, asked: string | null | undefined): string | undefined => {
  const tenant = asked === null || asked === undefined || asked === "" ? caller.tenantId : asked
  return tenantsOf(caller).includes(tenant) ? tenant : undefined
}

/** The CSRF token of a caller under `secret`. */
export const csrfToken = (secret: string, caller: DashboardCaller): string =>
  createHmac("sha256", secret).update(JSON.stringify([caller.tenantId, tenantsOf(caller), caller.ownerId ?? null])).digest("base64url")

/** Why a mutation is refused (a response), or undefined when it may go on. */
const refusal = (secret: string, caller: DashboardCaller, request: HttpServerRequest.HttpServerRequest) => {
  const forbidden = (message: string) => json({ error: "CrossSiteRequestRefused", message }, 403)
  if (!(request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
    return forbidden("a dashboard mutation needs content-type application/json")
  }
  const origin = request.headers["origin"]
  if (origin !== undefined && origin !== "null") {
    let host: string | undefined
    try {
      host = new URL(origin).host
    } catch {
      host = undefined
    }
    if (host !== request.headers["host"]) return forbidden(`the request comes from ${origin}, not from this dashboard's origin`)
  } else if (origin === "null") return forbidden("the request comes from an opaque origin")
  const given = Buffer.from(request.headers["x-baton-csrf"] ?? "")
  const expected = Buffer.from(csrfToken(secret, caller))
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return forbidden("the x-baton-csrf header is missing or wrong: reload the dashboard")
  }
  return undefined
}

/** The response with a `server-timing` header of how long `f` took on the Clock. */
const timed = <E, R>(f: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeNanos
    const response = yield* f
    const took = Number((yield* Clock.currentTimeNanos) - started) / 1e6
    return HttpServerResponse.setHeader(response, "server-timing", `app;dur=${took.toFixed(2)}`)
  })

/**
 * The listing's cursor that starts with the records created before `to`
 * (newest first): the `RecordStore` list cursor (base64url JSON of
 * `[createdAt, executionId]`) of a record created at `to - 1` whose id sorts
 * after every id of that instant. The listing then reads the
 * `(tenant_id, created_at, execution_id)` index from there.
 */
const cursorBefore = (to: number) => Buffer.from(JSON.stringify([to - 1, "\uffff"])).toString("base64url")

const numberParam = (query: URLSearchParams, name: string): number | undefined | "bad" => {
  const raw = query.get(name)
  if (raw === null || raw === "") return undefined
  const n = Number(raw)
  return Number.isFinite(n) && n >= 0 ? n : "bad"
}

/** One page of the executions listing, as the page asks for it; a bad query fails with its 400 response. */
const executionsPage = (baton: BatonShape, caller: DashboardCaller, query: URLSearchParams) =>
  Effect.gen(function*() {
    const tenantId = tenantFor(caller, query.get("tenant"))
    if (tenantId === undefined) return yield* Effect.fail(invalid("tenant", "is not a tenant this caller may see"))
    const status = query.get("status") || undefined
    if (status !== undefined && !statuses.includes(status as ExecutionStatus)) return yield* Effect.fail(invalid("status", `must be one of ${statuses.join(", ")}`))
    const from = numberParam(query, "from")
    const to = numberParam(query, "to")
    if (from === "bad") return yield* Effect.fail(invalid("from", "must be a time in epoch milliseconds"))
    if (to === "bad") return yield* Effect.fail(invalid("to", "must be a time in epoch milliseconds"))
    const limit = Math.min(200, Math.max(1, Number(query.get("limit") ?? 50) || 50))
    const page = yield* baton.list({
      tenantId,
      ownerId: caller.ownerId,
      status: status as ExecutionStatus | undefined,
      workflow: query.get("workflow") || undefined,
      threadId: query.get("thread") || undefined,
      cursor: query.get("cursor") || (to === undefined ? undefined : cursorBefore(to)),
      limit
    }).pipe(Effect.catchTag("UnknownThreadError", () => Effect.succeed({ executions: [], next: null })))
    // Newest first: the first one created before `from` ends the listing.
    const kept = from === undefined ? page.executions : page.executions.filter((e) => e.createdAt >= from)
    const next = kept.length < page.executions.length ? null : page.next
    return { tenantId, tenants: tenantsOf(caller), executions: kept, next }
  })

/** One step as the timeline shows it. */
interface TimelineStep {
  readonly node: string
  readonly instanceId: string
  readonly startedAt: number | null
  readonly endedAt: number | null
  readonly durationMillis: number | null
  readonly outcome: string
  /** The id of the `values` event holding the state after the step, when streamed. */
  readonly stateEventId: number | null
}

/** The events of one execution of a thread (at most `cap`). */
const eventsOf = (tenantId: string, threadId: string, executionId: string, cap = 5000) =>
  Effect.gen(function*() {
    const store = yield* Effect.serviceOption(EventStore)
    if (Option.isNone(store)) return [] as Array<StreamEvent>
    const out: Array<StreamEvent> = []
    let after = 0
    while (out.length < cap) {
      const page = yield* store.value.read(tenantId, threadId, after, 1000)
      out.push(...page.filter((e) => e.executionId === executionId))
      if (page.length < 1000) break
      after = page[page.length - 1]!.id
    }
    return out
  })

/** The timeline from the streamed events: each update is a step, from the event before it to it, on the instance that streamed it. */
const timelineOfEvents = (events: ReadonlyArray<StreamEvent>): Array<TimelineStep> => {
  const steps: Array<TimelineStep> = []
  let since: number | null = null
  events.forEach((e, i) => {
    if (e.mode === "status" && (e.data as { status?: string }).status === "Running") since = e.at
    if (e.mode !== "updates") return
    const state = events.slice(i + 1).find((x) => x.mode === "values")
    for (const node of Object.keys(e.data as object)) {
      const paused = node === "__interrupt__"
      steps.push({
        node: paused ? "(paused)" : node,
        instanceId: e.instanceId,
        startedAt: since,
        endedAt: e.at,
        durationMillis: since === null ? null : e.at - since,
        outcome: paused ? "Interrupted" : "Succeeded",
        stateEventId: state?.id ?? null
      })
    }
    since = e.at
  })
  return steps
}

/** One execution: its status view, its timeline, its states, its pauses with the decision's JSON Schema. */
const executionView = (ctx: DashboardContext, caller: DashboardCaller, tenantId: string, executionId: string) =>
  Effect.gen(function*() {
    const status = yield* ctx.baton.status(executionId, { tenantId, ownerId: caller.ownerId })
    const events = yield* eventsOf(tenantId, status.threadId, executionId)
    const history = yield* Effect.serviceOption(ExecutionHistoryStore)
    const snapshot = Option.isSome(history) ? yield* history.value.get(tenantId, executionId) : Option.none()
    const streamed = timelineOfEvents(events)
    // A snapshot's succeeded visit of a node takes the state the stream had after that node's next update.
    const statesByNode = new Map<string, Array<number | null>>()
    for (const x of streamed) if (x.outcome === "Succeeded") statesByNode.set(x.node, [...(statesByNode.get(x.node) ?? []), x.stateEventId])
    const timeline: Array<TimelineStep> = Option.isSome(snapshot)
      ? snapshot.value.steps.map((s) => ({
        node: s.undo === true ? `${s.node} (undo)` : s.node,
        instanceId: s.instanceId,
        startedAt: s.startedAt,
        endedAt: s.endedAt,
        durationMillis: s.endedAt === null ? null : s.endedAt - s.startedAt,
        outcome: s.outcome,
        stateEventId: s.outcome === "Succeeded" && s.undo !== true ? statesByNode.get(s.node)?.shift() ?? null : null
      }))
      : streamed
    const workflow = ctx.workflows.get(status.workflowName)
    const decision = workflow?.schemas?.decision
    const decisionSchema = decision === undefined ? null : Schema.toJsonSchemaDocument(decision as never).schema
    // Each streamed state, named by the step(s) whose update came just before it.
    let after = "(start)"
    const states: Array<{ id: number; at: number; instanceId: string; after: string; state: unknown }> = []
    for (const e of events) {
      if (e.mode === "updates") after = Object.keys(e.data as object).map((k) => (k === "__interrupt__" ? "(paused)" : k)).join(", ")
      if (e.mode === "values") states.push({ id: e.id, at: e.at, instanceId: e.instanceId, after, state: e.data })
    }
    return ({
      tenantId,
      status,
      timeline,
      timelineSource: Option.isSome(snapshot) ? "history" : "events",
      states,
      decisionSchema,
      lastEventId: events.length === 0 ? 0 : events[events.length - 1]!.id
    })
  })

/** The trees the caller's tenants have running, by the instance holding each. */
const instancesView = (baton: BatonShape, caller: DashboardCaller) =>
  Effect.gen(function*() {
    const running: Array<ExecutionSummary> = []
    for (const tenantId of tenantsOf(caller)) {
      let cursor: string | undefined
      do {
        const page = yield* baton.list({ tenantId, ownerId: caller.ownerId, status: "Running", cursor, limit: 500 })
        running.push(...page.executions.filter((e) => e.executionId === e.rootExecutionId))
        cursor = page.next ?? undefined
      } while (cursor !== undefined && running.length < 5000)
    }
    const leases = yield* Effect.serviceOption(LeaseStore)
    const held = Option.isNone(leases) ? [] : yield* getManyChunked(leases.value, running.map((e) => ({ tenantId: e.tenantId, rootExecutionId: e.executionId })))
    const byTree = new Map(held.map((l) => [`${l.tenantId}\u0000${l.rootExecutionId}`, l]))
    const now = yield* Clock.currentTimeMillis
    const instances = new Map<string, Array<unknown>>()
    const waiting: Array<unknown> = []
    for (const e of running) {
      const lease = byTree.get(`${e.tenantId}\u0000${e.executionId}`)
      const tree = { tenantId: e.tenantId, executionId: e.executionId, threadId: e.threadId, workflow: e.workflowName, epoch: lease?.epoch ?? null, expiresInMillis: lease === undefined ? null : lease.expiresAt - now }
      if (lease === undefined || lease.expiresAt <= now) {
        waiting.push(tree)
        continue
      }
      const id = instanceOfHolder(lease.holder)
      instances.set(id, [...(instances.get(id) ?? []), tree])
    }
    const readiness = yield* baton.checkReadiness
    return {
      self: { instanceId: baton.instanceId, readiness },
      instances: [...instances].map(([instanceId, trees]) => ({ instanceId, trees })).sort((a, b) => (a.instanceId < b.instanceId ? -1 : 1)),
      waitingForRecovery: waiting
    }
  })

/** Breakers and step slots (this instance's readiness) and each tenant's spend today and in all. */
const limitsView = (baton: BatonShape, caller: DashboardCaller) =>
  Effect.gen(function*() {
    const readiness = yield* baton.checkReadiness
    const limits = readiness.components.filter((c) => !["instance", "recovery-sweep", "crash-takeover"].includes(c.name) && !c.name.startsWith("store"))
    const ledger = yield* Effect.serviceOption(LedgerStore)
    const spend = Option.isNone(ledger) ? [] : yield* Effect.forEach(tenantsOf(caller), (tenantId) =>
      Effect.map(
        Effect.all([
          Budget.spent({ tenantId, scope: "tenant", scopeId: tenantId, window: "day" }),
          Budget.spent({ tenantId, scope: "tenant", scopeId: tenantId, window: "lifetime" })
        ]),
        ([today, lifetime]) => ({ tenantId, today, lifetime })
      ).pipe(Effect.provideService(LedgerStore, ledger.value)))
    return { instanceId: baton.instanceId, limits, spend }
  })

/** An SSE response that sends `view` as JSON whenever it changed, looking every `every` on the Clock. */
const live = <E>(view: Effect.Effect<unknown, E>, every: Duration.Input = Duration.seconds(1)) => {
  let last = ""
  const changed = Stream.tick(every).pipe(
    Stream.mapEffect(() => Effect.map(view, (v) => JSON.stringify(v))),
    Stream.filter((text) => {
      if (text === last) return false
      last = text
      return true
    }),
    Stream.map((text) => `event: view\ndata: ${text}\n\n`),
    Stream.catch((e) => Stream.make(`event: error\ndata: ${JSON.stringify({ error: (e as { _tag?: string })._tag ?? "Error" })}\n\n`))
  )
  const pings = Stream.map(Stream.tick(Duration.seconds(15)), () => ": keep-alive\n\n")
  return HttpServerResponse.stream(Stream.encodeText(Stream.merge(changed, pings, { haltStrategy: "left" })), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
}

const ResumeBody = Schema.Struct({ tenantId: Schema.String, pauseId: Schema.String, decision: Schema.Json })
const CancelBody = Schema.Struct({ tenantId: Schema.String, threadId: Schema.String })

/**
 * Adds the dashboard's routes to the router.
 *
 * @category internal
 * @since 0.1.0
 */
export const routes = (ctx: DashboardContext) =>
  Effect.gen(function*() {
    const { baton, control, router } = ctx
    const base = `${ctx.prefix}/dashboard`
    const secret = ctx.secret ?? randomBytes(32).toString("base64url")
    const add = (method: "GET" | "POST", path: string, handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>) =>
      router.add(method, `${base}${path}` as HttpRouter.PathInput, handler)
    const query = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://localhost").searchParams
    const param = (request: HttpServerRequest.HttpServerRequest, n: number) => decodeURIComponent(new URL(request.url, "http://localhost").pathname.slice(base.length).split("/")[n] ?? "")
    const page = control((caller) =>
      Effect.succeed(HttpServerResponse.html(Assets.page({ base, csrf: csrfToken(secret, caller), tenants: tenantsOf(caller), tenantId: caller.tenantId })).pipe(
        HttpServerResponse.setHeaders({
          "cache-control": "no-store",
          "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
          "x-frame-options": "DENY"
        })
      ))
    )
    yield* add("GET", "", page)
    yield* add("GET", "/app.js", control(() => Effect.succeed(HttpServerResponse.text(Assets.script, { contentType: "text/javascript; charset=utf-8" }))))
    yield* add("GET", "/app.css", control(() => Effect.succeed(HttpServerResponse.text(Assets.style, { contentType: "text/css; charset=utf-8" }))))
    yield* add("GET", "/api/executions", control((caller, request) => timed(Effect.map(executionsPage(baton, caller, query(request)), (v) => json(v)))))
    yield* add("GET", "/api/executions/live", control((caller, request) => Effect.succeed(live(executionsPage(baton, caller, query(request))))))
    yield* add("GET", "/api/execution/:tenant/:executionId", control((caller, request) =>
      Effect.suspend(() => {
        const tenantId = tenantFor(caller, param(request, 3))
        if (tenantId === undefined) return Effect.succeed(json({ error: "UnknownExecutionError", message: "no such execution" }, 404))
        return timed(Effect.map(executionView(ctx, caller, tenantId, param(request, 4)), (v) => json(v)))
      })
    ))
    // The same view again each time it changed (every second): live without an EventStore too.
    yield* add("GET", "/api/execution/:tenant/:executionId/live", control((caller, request) =>
      Effect.sync(() => {
        const tenantId = tenantFor(caller, param(request, 3))
        if (tenantId === undefined) return json({ error: "UnknownExecutionError", message: "no such execution" }, 404)
        return live(executionView(ctx, caller, tenantId, param(request, 4)))
      })
    ))
    yield* add("GET", "/api/stream/:tenant/:threadId", control((caller, request) =>
      Effect.suspend(() => {
        const tenantId = tenantFor(caller, param(request, 3))
        if (tenantId === undefined) return Effect.succeed(json({ error: "UnknownThreadError", message: "no such thread" }, 404))
        return Sse.response(baton, param(request, 4), { tenantId, ownerId: caller.ownerId }, request)
      })
    ))
    yield* add("GET", "/api/instances", control((caller) => timed(Effect.map(instancesView(baton, caller), (v) => json(v)))))
    yield* add("GET", "/api/instances/live", control((caller) => Effect.succeed(live(instancesView(baton, caller)))))
    yield* add("GET", "/api/limits", control((caller) => timed(Effect.map(limitsView(baton, caller), (v) => json(v)))))
    yield* add("GET", "/api/limits/live", control((caller) => Effect.succeed(live(limitsView(baton, caller)))))
    /** A page's action: the cross-site check, then the JSON body, in the caller's tenant (another tenant's is `unknown`, 404). */
    const action = <A extends { readonly tenantId: string }, E, R>(
      schema: Schema.Decoder<A>,
      unknown: { readonly error: string; readonly message: string },
      act: (caller: DashboardCaller, body: A, tenantId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
    ) =>
      control((caller, request) =>
        Effect.gen(function*() {
          const refused = refusal(secret, caller, request)
          if (refused !== undefined) return refused
          const body = yield* HttpServerRequest.schemaBodyJson(schema)
          const tenantId = tenantFor(caller, body.tenantId)
          return tenantId === undefined ? json(unknown, 404) : yield* act(caller, body, tenantId)
        })
      )
    yield* add("POST", "/api/resume", action(ResumeBody, { error: "UnknownPauseError", message: "no such pause" }, (caller, body, tenantId) =>
      // As `POST /pauses/:pauseId/resume`: answers once the tree rests (the page follows it live meanwhile).
      Effect.map(
        baton.resume({ tenantId, ownerId: caller.ownerId, pauseId: body.pauseId, decision: body.decision }),
        (out) => json({ answered: true, output: out._tag })
      )))
    yield* add("POST", "/api/cancel", action(CancelBody, { error: "UnknownThreadError", message: "no such thread" }, (caller, body, tenantId) =>
      Effect.map(baton.cancel(body.threadId, { tenantId, ownerId: caller.ownerId }), (result) => json(result))))
  })
