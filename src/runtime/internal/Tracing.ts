/**
 * The spans of a pass and of its steps. A pass runs in a span `baton.pass`;
 * each step body — a `Workflow.step` promise or a `Workflow.effectStep`
 * Effect — runs in a span `baton.step` whose parent is the pass's span, even
 * though LangGraph calls it from outside any fiber (the parent is passed
 * explicitly, with the tracer of the pass). Store calls stay untraced.
 *
 * @since 0.1.0
 */
import { Cause, Context, Effect, Exit, Option, Tracer } from "effect"
import type { ExecutionRecord } from "../../stores/ExecutionRecord.ts"

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
 * current tracer, over `services`.
 *
 * @category internal
 * @since 0.1.0
 */
export const stepRunner = Effect.fnUntraced(function*(services: Context.Context<any>, attributes: Record<string, unknown>) {
  const parent = Option.getOrUndefined(yield* Effect.option(Effect.currentSpan))
  const context = Context.add(services, Tracer.Tracer, yield* Effect.tracer)
  /** The body's value, or what it threw (an interrupt under an aborted `signal` throws the abort reason). */
  const settle = <A>(exit: Exit.Exit<A, unknown>, signal: AbortSignal | undefined): A => {
    if (Exit.isSuccess(exit)) return exit.value
    if (signal?.aborted === true && Cause.hasInterruptsOnly(exit.cause)) throw signal.reason
    throw Cause.squash(exit.cause)
  }
  return <A, E>(node: string, body: Effect.Effect<A, E>, signal?: AbortSignal): Promise<A> =>
    Effect.runPromiseExitWith(context)(
      Effect.withSpan(body, "baton.step", { parent, attributes: { ...attributes, "baton.node": node } }),
      signal === undefined ? undefined : { signal }
    ).then((exit) => settle(exit, signal))
})
