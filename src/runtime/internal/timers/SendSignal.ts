/**
 * The `signal` program: sends a named, schema-checked signal to a thread's
 * running or paused execution, from any instance. The signal is kept in the
 * tree's send order until a `ctx.waitFor` of its name takes it (one sent
 * before the wait started waits for it); a wait resting on it is made due in
 * the same atomic step, and any instance's waker answers it.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { BatonConfigError, InvalidInputError } from "../../../stores/Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import * as V from "../../../stores/internal/validate.ts"
import { UnknownSignalError } from "../../Errors.ts"
import * as Workflow from "../../Workflow.ts"
import * as InputSize from "../calls/InputSize.ts"
import { Instance, type InstanceShape, notStopping, workflowForRecord } from "../Instance.ts"
import * as Deliver from "./Deliver.ts"
import * as Signals from "./Signals.ts"

/**
 * Whose thread `Baton.signal` signals.
 *
 * @category models
 * @since 0.1.0
 */
export interface SignalOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}

/**
 * What `Baton.signal` answers: the signal kept, with its place in the tree's send order.
 *
 * @category models
 * @since 0.1.0
 */
export interface SentSignal {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  /** The execution (tree root) that keeps it. */
  readonly executionId: string
  readonly name: string
  readonly seq: number
}

/** The signal's payload, decoded by the workflow's schema for `name`; an undeclared name is `UnknownSignalError`. */
const checkedPayload = Effect.fnUntraced(function*(record: ExecutionRecord, name: string, payload: unknown) {
  const workflow = yield* workflowForRecord(record)
  const declared = workflow.signals ?? {}
  const schema = Object.hasOwn(declared, name) ? declared[name] : undefined
  if (schema === undefined) return yield* new UnknownSignalError({ workflowName: workflow.name, name, declared: Object.keys(declared) })
  yield* Workflow.decodeSignal(workflow, name, payload, "Baton.signal")
  // Kept (and handed to the wait) as sent: JSON, within the input size bound.
  yield* V.json("Baton.signal", "payload", payload)
  yield* InputSize.check("Baton.signal", "payload", payload, (yield* Instance).config.maxInputBytes)
})

/**
 * Sends a signal to the thread's running or paused execution (see `Baton.signal`).
 *
 * @category internal
 * @since 0.1.0
 */
export const signal = (threadId: ThreadId, name: string, payload: unknown, options?: SignalOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const instance = yield* Instance
    const tenantId = options?.tenantId ?? defaultTenant
    yield* V.nonEmpty("Baton.signal", "name", name)
    const store = Deliver.storeOf(instance)
    if (store === undefined) {
      return yield* new InvalidInputError({ operation: "Baton.signal", field: "stores", reason: "signals need a TimerStore: provide one (the store bundles do)" })
    }
    const root = yield* Signals.activeRoot(tenantId, threadId, options?.ownerId)
    yield* checkedPayload(root, name, payload)
    const sent = yield* Signals.sendTo(store, root, name, payload)
    Deliver.poke(instance)
    return { tenantId, threadId, executionId: root.rootExecutionId, name, seq: sent.seq } satisfies SentSignal as SentSignal
  }).pipe(Effect.withSpan("Baton.signal"))

/**
 * At build: a workflow that declares signals needs a `TimerStore` (`BatonConfigError` on `stores`).
 *
 * @category internal
 * @since 0.1.0
 */
export const checkStores = (instance: InstanceShape) => {
  const signalling = [...instance.config.workflows.values()].find((w) => Object.keys(w.signals ?? {}).length > 0)
  return signalling === undefined || Deliver.available(instance)
    ? Effect.void
    : Effect.fail(new BatonConfigError({
      field: "stores",
      reason: `lack a TimerStore, which workflow "${signalling.name}" needs for its signals: provide one shared by the instances (the store bundles do)`
    }))
}
