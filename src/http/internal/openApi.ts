/**
 * The OpenAPI 3.1 document of `baton/http`'s routes, made by effect's own
 * `OpenApi.fromApi` from an `HttpApi` that declares each route with the same
 * Schemas the handlers decode with (the bodies) and describes what they
 * answer. The routes themselves stay plain `HttpRouter` handlers; a test
 * checks that every route served is in the document and nothing else is.
 */
import { Schema } from "effect"
import type { HttpRouter } from "effect/http"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"

/** The error body every control route answers with: `{ error: _tag, message }`. */
const ErrorBody = Schema.Struct({
  error: Schema.String.annotate({ description: "the error's _tag, e.g. UnknownExecutionError, Unauthorized, BodyTooLarge" }),
  message: Schema.String
}).annotate({ identifier: "Error" })

const errorAt = (code: number, description: string) => ErrorBody.annotate({ description }).pipe(HttpApiSchema.status(code))

/** The errors a control route may answer (see `statusOf`). */
const controlErrors = [
  errorAt(400, "a body that does not decode (with its issues' paths), an invalid input, an unknown workflow"),
  errorAt(401, "the app's authorize hook found no caller for the request"),
  errorAt(403, "the thread belongs to another owner"),
  errorAt(404, "no such execution, thread or pause in the caller's tenant"),
  errorAt(409, "busy, or already answered"),
  errorAt(413, "the body is over the server's maxBodyBytes"),
  errorAt(429, "over the tenant's quota"),
  errorAt(503, "the instance is stopping, or a store fails transiently")
] as const

const Json = Schema.Json
const described = (description: string) => Json.annotate({ description })

/** A control route's declaration: what it takes and answers, and the errors every control route may answer. */
const controlled = <const Fields extends object>(fields: Fields) => ({ ...fields, error: controlErrors })

/** Builds the document for routes under `prefix` with the start and resume bodies given. */
export const document = (options: {
  readonly prefix: string
  readonly startBody: Schema.Top
  readonly resumeBody: Schema.Top
  readonly maxBodyBytes: number
  readonly signalBody?: Schema.Top | undefined
  /** The body of `POST /schedules`, when the schedule routes are served. */
  readonly scheduleBody?: Schema.Top | undefined
}): OpenApi.OpenAPISpec => {
  const executionId = { executionId: Schema.String }
  const threadId = { threadId: Schema.String }
  const probes = HttpApiGroup.make("probes")
    .add(HttpApiEndpoint.get("livez", "/livez", { success: described("the liveness report (503 when Unhealthy)") }))
    .add(HttpApiEndpoint.get("readyz", "/readyz", { success: described("the readiness report, one ping per store (503 when Unhealthy)") }))
    .add(HttpApiEndpoint.get("metrics", "/metrics", { success: Schema.String.annotate({ description: "Prometheus text of the current metrics" }) }))
  const control = HttpApiGroup.make("control")
    .add(HttpApiEndpoint.post("start", "/executions", controlled({
      payload: options.startBody as never,
      success: described("the handle: executionId, rootExecutionId, threadId, tenantId").pipe(HttpApiSchema.status(202))
    })))
    .add(HttpApiEndpoint.get("list", "/executions", controlled({
      query: {
        status: Schema.optional(Schema.Literals(["Running", "Paused", "Finished", "Failed", "Cancelled"])),
        workflow: Schema.optional(Schema.String),
        threadId: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.String),
        cursor: Schema.optional(Schema.String)
      },
      success: described("a page: { executions, next }")
    })))
    .add(HttpApiEndpoint.get("status", "/executions/:executionId", controlled({ params: executionId, success: described("the execution's status view") })))
    .add(HttpApiEndpoint.get("pendingPauses", "/threads/:threadId/pauses", controlled({ params: threadId, success: described("{ pauses }: the thread's pending pauses") })))
    .add(HttpApiEndpoint.get("history", "/threads/:threadId/history", controlled({ params: threadId, success: described("{ threadId, executions }: the thread's executions, oldest first, each with its history snapshot (steps, pauses) once it ended, else null") })))
    .add(HttpApiEndpoint.post("resume", "/pauses/:pauseId/resume", controlled({
      params: { pauseId: Schema.String },
      payload: options.resumeBody as never,
      success: described("the execution's output once it rests")
    })))
    .add(HttpApiEndpoint.post("cancel", "/threads/:threadId/cancel", controlled({ params: threadId, success: described("{ cancelled }") })))
    .add(HttpApiEndpoint.post("signal", "/threads/:threadId/signals/:name", controlled({
      params: { threadId: Schema.String, name: Schema.String },
      payload: (options.signalBody ?? Schema.Struct({ payload: Json })) as never,
      success: described("the signal kept: { tenantId, threadId, executionId, name, seq } (409 when the thread has no running execution)")
    })))
    .add(HttpApiEndpoint.get("checkpoints", "/threads/:threadId/checkpoints", controlled({
      params: threadId,
      query: { ns: Schema.optional(Schema.String), limit: Schema.optional(Schema.String), cursor: Schema.optional(Schema.String) },
      success: described("a page of the thread's checkpoints, newest first: { checkpoints, next }")
    })))
    .add(HttpApiEndpoint.get("stream", "/threads/:threadId/stream", controlled({
      params: threadId,
      query: { lastEventId: Schema.optional(Schema.String), until: Schema.optional(Schema.Literals(["end", "rest"])) },
      success: Schema.String.annotate({
        description: "text/event-stream: the thread's live output, one event per line group (id, event = mode, data = the event as JSON); resumes after the Last-Event-ID header"
      })
    })))
  const scheduleId = { scheduleId: Schema.String }
  const schedules = HttpApiGroup.make("schedules")
    .add(HttpApiEndpoint.post("createSchedule", "/schedules", controlled({
      payload: (options.scheduleBody ?? Json) as never,
      success: described("the schedule: its definition, next tick, last tick's outcome").pipe(HttpApiSchema.status(201))
    })))
    .add(HttpApiEndpoint.get("listSchedules", "/schedules", controlled({
      query: { limit: Schema.optional(Schema.String), cursor: Schema.optional(Schema.String) },
      success: described("a page: { schedules, next }")
    })))
    .add(HttpApiEndpoint.get("getSchedule", "/schedules/:scheduleId", controlled({ params: scheduleId, success: described("the schedule") })))
    .add(HttpApiEndpoint.post("pauseSchedule", "/schedules/:scheduleId/pause", controlled({ params: scheduleId, success: described("the schedule, paused") })))
    .add(HttpApiEndpoint.post("resumeSchedule", "/schedules/:scheduleId/resume", controlled({ params: scheduleId, success: described("the schedule, firing from its next tick") })))
    .add(HttpApiEndpoint.delete("deleteSchedule", "/schedules/:scheduleId", controlled({ params: scheduleId, success: described("{ deleted: true }") })))
  const served = HttpApi.make("baton")
    .add(options.prefix === "" ? probes : probes.prefix(options.prefix as HttpRouter.PathInput))
    .add(options.prefix === "" ? control : control.prefix(options.prefix as HttpRouter.PathInput))
  const title = "baton"
  const description = `Tenant-scoped control of baton executions. Every control route is authorized by the app's hook; request bodies are limited to ${options.maxBodyBytes} bytes.`
  return options.scheduleBody === undefined
    ? OpenApi.fromApi(served.annotate(OpenApi.Title, title).annotate(OpenApi.Description, description))
    : OpenApi.fromApi(
      served.add(options.prefix === "" ? schedules : schedules.prefix(options.prefix as HttpRouter.PathInput))
        .annotate(OpenApi.Title, title)
        .annotate(OpenApi.Description, description)
    )
}
