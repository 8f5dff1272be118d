/**
 * Server-sent events over `Baton.stream`: the route `GET
 * /threads/:threadId/stream` answers `text/event-stream`, one SSE event per
 * stream event (`id:` its id, `event:` its mode, `data:` the event as JSON),
 * and resumes after the `Last-Event-ID` header (or `?lastEventId=`) a
 * reconnecting `EventSource` sends. A comment line every 15 seconds keeps
 * proxies from closing a quiet stream. `?until=end|rest` ends the response
 * after the status event that ends (or rests) an execution.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { BatonShape } from "../../runtime/Baton.ts"
import type { StreamEvent } from "../../stores/EventStore.ts"

/**
 * One event as SSE text.
 *
 * @category internal
 * @since 0.1.0
 */
export const format = (event: StreamEvent): string => `id: ${event.id}\nevent: ${event.mode}\ndata: ${JSON.stringify(event)}\n\n`

/** The event id a reconnecting client gives (header first), or undefined; a value that is not an id is the runtime's to refuse. */
const lastEventIdOf = (request: HttpServerRequest.HttpServerRequest, query: URLSearchParams): number | undefined => {
  const given = request.headers["last-event-id"] ?? query.get("lastEventId") ?? undefined
  return given === undefined || given === "" ? undefined : Number(given)
}

const invalid = (field: string, message: string) =>
  HttpServerResponse.jsonUnsafe({ error: "InvalidInputError", message: `${field} ${message}`, issues: [{ path: [field], message }] }, { status: 400 })

/**
 * The SSE response of a thread's stream for a caller whose access was checked.
 *
 * @category internal
 * @since 0.1.0
 */
export const response = (
  baton: BatonShape,
  threadId: string,
  caller: { readonly tenantId: string; readonly ownerId?: string | undefined },
  request: HttpServerRequest.HttpServerRequest,
  keepAlive: Duration.Input = Duration.seconds(15)
) =>
  Effect.gen(function*() {
    const query = new URL(request.url, "http://localhost").searchParams
    const until = (query.get("until") ?? undefined) as "end" | "rest" | undefined
    const lastEventId = lastEventIdOf(request, query)
    if (lastEventId !== undefined && !(Number.isSafeInteger(lastEventId) && lastEventId >= 0)) {
      return invalid("lastEventId", "must be the id of an event: a whole number ≥ 0")
    }
    if (until !== undefined && until !== "end" && until !== "rest") return invalid("until", "must be end or rest")
    const options = { ...caller, lastEventId, until }
    // The thread's access (tenant, owner) and the options are checked before the response starts: a refusal is a status, not an event.
    yield* baton.pendingPauses({ ...caller, threadId })
    const events = baton.stream(threadId, options).pipe(
      Stream.map(format),
      Stream.catch((e) => Stream.make(`event: error\ndata: ${JSON.stringify({ error: e._tag, message: e.message })}\n\n`))
    )
    const pings = Stream.map(Stream.tick(keepAlive), () => ": keep-alive\n\n")
    const body = Stream.merge(Stream.concat(Stream.make(": stream\n\n"), events), pings, { haltStrategy: "left" })
    return HttpServerResponse.stream(Stream.encodeText(body), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    })
  })
