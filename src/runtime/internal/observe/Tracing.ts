/**
 * The spans of a pass and of its steps. A pass runs in a span `baton.pass`;
 * each step body — a `Workflow.step` promise or a `Workflow.effectStep`
 * Effect — runs in a span `baton.step` whose parent is the pass's span, even
 * though LangGraph calls it from outside any fiber (the parent is passed
 * explicitly, with the tracer of the pass). Store calls stay untraced.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, Exit, Option, Tracer } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"

/**
 * The attributes every span of a pass carries.
 *
 * @category internal
 * @since 0.1.0
 */
export const passAttributes = (record: ExecutionRecord, workflowName: string, instanceId: string, epoch: number) => ({
  "baton.tenant": record.tenantId,
  "baton.thread": record.threadId,
  "baton.execution": record.executionId,
  "baton.root": record.rootExecutionId,
  "baton.workflow": workflowName,
  "baton.instance": instanceId,
  "baton.epoch": epoch
})

/**
 * Runs step bodies in spans under the current span (the pass's), with the
 * current tracer. The span is made with the tracer directly (no fiber for a
 * promise body); an Effect body runs over `services` with the step's span as
 * its parent, so its own spans sit under it.
 *
 * @category internal
 * @since 0.1.0
 */
export const stepRunner = Effect.fnUntraced(function*(services: Context.Context<any>, attributes: Record<string, unknown>) {
  const parent = Option.getOrUndefined(yield* Effect.option(Effect.currentSpan))
  const tracer = yield* Effect.tracer
  const clock = yield* Clock.Clock
  const context = Context.add(services, Tracer.Tracer, tracer)
  // Effect's own in-memory tracer exports nothing: with it (no tracing backend installed) nobody can observe a
  // step span's attributes, and a promise body needs no span at all (an Effect body keeps one as its parent).
  const untraced = tracer === Tracer.nativeTracer
  const open = (node: string): Tracer.Span => {
    const span = tracer.span({
      name: "baton.step",
      parent: Option.fromNullishOr(parent),
      annotations: Context.empty(),
      links: [],
      startTime: clock.currentTimeNanosUnsafe(),
      kind: "internal",
      root: false,
      sampled: parent?.sampled ?? true
    })
    if (untraced) return span
    for (const key in attributes) span.attribute(key, attributes[key])
    span.attribute("baton.node", node)
    return span
  }
  /** Ends the span with how the body settled, and hands the settlement on. */
  const settle = <A>(span: Tracer.Span, body: Promise<A>): Promise<A> =>
    body.then(
      (value) => {
        span.end(clock.currentTimeNanosUnsafe(), Exit.succeed(value))
        return value
      },
      (error) => {
        span.end(clock.currentTimeNanosUnsafe(), Exit.fail(error))
        throw error
      }
    )
  /** The Effect body's value, or what it threw (an interrupt under an aborted `signal` throws the abort reason). */
  const unwrap = <A>(exit: Exit.Exit<A, unknown>, signal: AbortSignal): A => {
    if (Exit.isSuccess(exit)) return exit.value
    if (signal.aborted && Cause.hasInterruptsOnly(exit.cause)) throw signal.reason
    throw Cause.squash(exit.cause)
  }
  return {
    /** A promise body in its step span. */
    promise: <A>(node: string, body: () => Promise<A>): Promise<A> => {
      if (untraced) {
        try {
          return body()
        } catch (error) {
          return Promise.reject(error)
        }
      }
      const span = open(node)
      let started: Promise<A>
      try {
        started = body()
      } catch (error) {
        started = Promise.reject(error)
      }
      return settle(span, started)
    },
    /** An Effect body in its step span, over the instance's services, interrupted when `signal` aborts. */
    effect: <A, E>(node: string, body: Effect.Effect<A, E>, signal: AbortSignal): Promise<A> => {
      const span = open(node)
      return settle(
        span,
        Effect.runPromiseExitWith(context)(Effect.withParentSpan(body, span), { signal }).then((exit) => unwrap(exit, signal))
      )
    }
  }
})
