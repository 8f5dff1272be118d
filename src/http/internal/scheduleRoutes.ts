/**
 * The schedule routes of `BatonHttp`, added when the app provides the
 * `Schedules` service: create, list, read, pause, resume and delete, for
 * the caller's tenant and owner.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { SchedulesShape } from "../../runtime/Schedules.ts"
import type { AnyWorkflow } from "../../runtime/Workflow.ts"

/**
 * The body of `POST /schedules`: the schedule's id, the workflow (by name)
 * and input, and the options of `Schedules.create` (`every` and `grace` as
 * a duration text such as "15 minutes", or milliseconds).
 *
 * @category schemas
 * @since 0.1.0
 */
export const ScheduleBody = Schema.Struct({
  scheduleId: Schema.String,
  workflow: Schema.String,
  input: Schema.Json,
  cron: Schema.optional(Schema.String),
  timeZone: Schema.optional(Schema.String),
  dstOverlap: Schema.optional(Schema.Literals(["earlier", "later", "both"])),
  every: Schema.optional(Schema.Union([Schema.String, Schema.Number])),
  startAt: Schema.optional(Schema.Number),
  missed: Schema.optional(Schema.Literals(["skip", "one", "all"])),
  maxCatchUp: Schema.optional(Schema.Number),
  grace: Schema.optional(Schema.Union([Schema.String, Schema.Number])),
  overlap: Schema.optional(Schema.Literals(["skip", "allow", "cancel"])),
  paused: Schema.optional(Schema.Boolean)
})

/** Who a request acts for. */
interface Caller {
  readonly tenantId: string
  readonly ownerId?: string | undefined
}

/**
 * What the routes are built from: the router, the prefix, `BatonHttp`'s
 * authorizing wrapper and body reader, the workflows by name, the API.
 *
 * @category models
 * @since 0.1.0
 */
export interface RouteParts {
  readonly router: Pick<HttpRouter.HttpRouter, "add">
  readonly prefix: string
  readonly control: <E, R>(
    f: (caller: Caller, request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest>
  readonly body: <S extends Schema.Codec<any, any, never, never>>(schema: S) => Effect.Effect<S["Type"], HttpServerResponse.HttpServerResponse, HttpServerRequest.HttpServerRequest>
  readonly byName: ReadonlyMap<string, AnyWorkflow>
  readonly schedules: SchedulesShape
}

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })
const param = (name: string) => Effect.map(HttpRouter.params, (p) => p[name] ?? "")
const scope = (caller: Caller) => ({ tenantId: caller.tenantId, ownerId: caller.ownerId })

/**
 * Adds the routes:
 *
 * | method | path | answers |
 * |---|---|---|
 * | POST | /schedules | `ScheduleBody` → 201, the schedule |
 * | GET | /schedules | `?limit&cursor` → `{ schedules, next }` |
 * | GET | /schedules/:scheduleId | the schedule (its next tick, its last tick's outcome) |
 * | POST | /schedules/:scheduleId/pause | the schedule, paused |
 * | POST | /schedules/:scheduleId/resume | the schedule, firing again from its next tick |
 * | DELETE | /schedules/:scheduleId | `{ deleted: true }` |
 *
 * @category constructors
 * @since 0.1.0
 */
export const add = (parts: RouteParts) =>
  Effect.gen(function*() {
    const { body, byName, control, prefix, router, schedules } = parts
    const path = (p: string) => `${prefix}${p}` as HttpRouter.PathInput
    yield* router.add("POST", path("/schedules"), control((caller) =>
      Effect.gen(function*() {
        const { every, grace, input, scheduleId, workflow: name, ...options } = yield* body(ScheduleBody)
        const workflow = byName.get(name)
        if (workflow === undefined) {
          return json({ error: "UnknownWorkflowError", message: `no workflow "${name}" is served here`, known: [...byName.keys()] }, 400)
        }
        // A duration text ("15 minutes") or milliseconds; a text that is no duration is refused by create, naming the field.
        const durations = { every: every as Duration.Input | undefined, grace: grace as Duration.Input | undefined }
        return json(yield* schedules.create(scheduleId, workflow, input, { ...options, ...durations, ...scope(caller) }), 201)
      })
    ))
    yield* router.add("GET", path("/schedules"), control((caller, request) =>
      Effect.gen(function*() {
        const query = new URL(request.url, "http://localhost").searchParams
        const limit = query.get("limit")
        return json(yield* schedules.list({ ...scope(caller), cursor: query.get("cursor") ?? undefined, limit: limit === null ? undefined : Number(limit) }))
      })
    ))
    yield* router.add("GET", path("/schedules/:scheduleId"), control((caller) =>
      Effect.flatMap(param("scheduleId"), (id) => Effect.map(schedules.get(id, scope(caller)), (view) => json(view)))
    ))
    yield* router.add("POST", path("/schedules/:scheduleId/pause"), control((caller) =>
      Effect.flatMap(param("scheduleId"), (id) => Effect.map(schedules.pause(id, scope(caller)), (view) => json(view)))
    ))
    yield* router.add("POST", path("/schedules/:scheduleId/resume"), control((caller) =>
      Effect.flatMap(param("scheduleId"), (id) => Effect.map(schedules.resume(id, scope(caller)), (view) => json(view)))
    ))
    yield* router.add("DELETE", path("/schedules/:scheduleId"), control((caller) =>
      Effect.flatMap(param("scheduleId"), (id) => Effect.map(schedules.delete(id, scope(caller)), (r) => json(r)))
    ))
  })
