/**
 * One running instance: its id, its configuration, the passes it is moving
 * and the services its Effect steps run with. Internal: no public type
 * mentions it (the testing harness reaches it through `Runtime.make`).
 *
 * @since 0.1.0
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Context, type Deferred, Effect } from "effect"
import { InstanceStoppingError, UnknownWorkflowError } from "../Errors.ts"
import type * as BatonConfig from "../BatonConfig.ts"
import type { InstanceId } from "../../stores/Ids.ts"
import type { AnyWorkflow } from "../Workflow.ts"

/**
 * The instance's checked configuration and the workflows it runs, by name (children included).
 *
 * @category models
 * @since 0.1.0
 */
export interface RuntimeConfig extends BatonConfig.BatonConfigShape {
  readonly workflows: ReadonlyMap<string, AnyWorkflow>
}

/**
 * What `graph.compile` returns, as far as baton uses it.
 *
 * @category models
 * @since 0.1.0
 */
export interface CompiledGraph {
  invoke(input: unknown, config: unknown): Promise<unknown>
  getState(config: unknown): Promise<{
    /** The checkpoint's time; absent when the thread has no checkpoint (LangGraph's empty snapshot). */
    readonly createdAt?: string | undefined
    readonly values: unknown
    readonly next: ReadonlyArray<string>
    readonly tasks: ReadonlyArray<{ readonly interrupts?: ReadonlyArray<{ readonly id?: string; readonly value?: unknown }> }>
  }>
}

/**
 * A pass this instance is moving (or waiting to move).
 *
 * @category models
 * @since 0.1.0
 */
export interface ActivePass {
  readonly tenantId: string
  readonly rootExecutionId: string
  readonly holder: string
  /** "waiting": for the lease; "running": Effect code of the runtime; "invoking": inside LangGraph's invoke. */
  phase: "waiting" | "running" | "invoking"
  /** Step bodies started and not yet settled (they may outlive an aborted invoke). */
  readonly bodies: Set<Promise<unknown>>
  /** Bodies now waiting on the Clock. */
  parkedBodies: number
  readonly signal: () => AbortSignal | undefined
  readonly abort: (error: unknown) => void
}

/**
 * The state of one running instance.
 *
 * @category models
 * @since 0.1.0
 */
export interface InstanceShape {
  readonly instanceId: InstanceId
  /** This instance's own part of its holder ids (`instanceId#incarnation.n`): unique even when instance ids are not. */
  readonly incarnation: string
  readonly config: RuntimeConfig
  readonly saver: BaseCheckpointSaver
  readonly passes: Set<ActivePass>
  /** Resolves at the next end of a pass of this instance. */
  readonly passEnded: Effect.Effect<void>
  readonly notifyPassEnded: () => void
  /** Grows on every step start/end and pass phase change: lets a test harness see that nothing moves. */
  readonly activity: { count: number }
  /** A holder id unique to one pass: `instanceId#n`. */
  readonly nextHolder: () => string
  /** The workflow's graph compiled with this instance's checkpointer (once per workflow). */
  readonly compiled: (workflow: AnyWorkflow) => CompiledGraph
  /** What liveness reads (no I/O). */
  readonly health: {
    /** When the instance started (liveness counts a first sweep that never ends from here). */
    readonly startedAt: number
    /** When the recovery sweep last finished a look. */
    lastSweepEndedAt: number | undefined
    /** Set once a graceful close began (and when the Layer's scope closed). */
    stopping: boolean
    /** Set when the scope the runtime was built in closed: the instance is gone for good. */
    closed?: boolean
  }
  /** Completed when a graceful close reaches its deadline: nothing waits for step bodies after it. */
  readonly closeDeadline: Deferred.Deferred<void>
  /** The services Effect steps run with (everything given to the Baton Layer). */
  readonly services: Context.Context<any>
}

/**
 * The running instance's state, as a service for the runtime's programs.
 *
 * @category services
 * @since 0.1.0
 */
export class Instance extends Context.Service<Instance, InstanceShape>()("baton/Instance") {}

/**
 * The registered workflow `workflow` names, matched by name and config hash:
 * an unregistered name, or the same name under another hash, is
 * `UnknownWorkflowError` (naming both hashes).
 *
 * @category internal
 * @since 0.1.0
 */
export const registeredWorkflow = (workflow: { readonly name: string; readonly configHash: string }) =>
  Effect.flatMap(Effect.service(Instance), (instance) => {
    const registered = instance.config.workflows.get(workflow.name)
    if (registered === undefined) return Effect.fail(new UnknownWorkflowError({ workflowName: workflow.name }))
    return registered.configHash === workflow.configHash
      ? Effect.succeed(registered)
      : Effect.fail(new UnknownWorkflowError({ workflowName: workflow.name, configHash: workflow.configHash, registeredHash: registered.configHash }))
  })

/**
 * The registered workflow that may continue `record`'s tree: its name, and
 * its config hash unless the registered workflow says `resumeAnyway`.
 *
 * @category internal
 * @since 0.1.0
 */
export const workflowForRecord = (record: { readonly workflowName: string; readonly configHash: string }) =>
  Effect.flatMap(Effect.service(Instance), (instance) => {
    const registered = instance.config.workflows.get(record.workflowName)
    return registered?.resumeAnyway === true
      ? Effect.succeed(registered)
      : registeredWorkflow({ name: record.workflowName, configHash: record.configHash })
  })

/**
 * Fails with `InstanceStoppingError` once a close began: new calls are refused.
 *
 * @category internal
 * @since 0.1.0
 */
export const notStopping: Effect.Effect<void, InstanceStoppingError, Instance> = Effect.flatMap(Effect.service(Instance), (instance) =>
  instance.health.stopping ? Effect.fail(new InstanceStoppingError({ instanceId: instance.instanceId })) : Effect.void)
