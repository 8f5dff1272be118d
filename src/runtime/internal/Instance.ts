/**
 * One running instance: its id, its configuration, its graphs and the
 * services its Effect steps run with — what does not change while it runs.
 * Its moving parts are owned by the subsystems that move them: the passes
 * (`pass/Passes`) and its life (`Lifecycle`: started, stopping, closed).
 * Internal: no public type mentions it (the testing harness reaches it
 * through `Runtime.make`).
 *
 * @since 0.1.0
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Context, Effect } from "effect"
import { InstanceStoppingError, UnknownWorkflowError } from "../Errors.ts"
import type * as BatonConfig from "../BatonConfig.ts"
import type { InstanceId } from "../../stores/Ids.ts"
import type { AnyWorkflow } from "../Workflow.ts"
import type { LifecycleShape } from "./Lifecycle.ts"
import type { PassesShape } from "./pass/Passes.ts"

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

export type { ActivePass } from "./pass/Passes.ts"

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
  /** A holder id unique to one pass: `instanceId#n`. */
  readonly nextHolder: () => string
  /** The workflow's graph compiled with this instance's checkpointer (once per workflow). */
  readonly compiled: (workflow: AnyWorkflow) => CompiledGraph
  /** The passes it is moving, owned by the pass subsystem. */
  readonly passes: PassesShape
  /** Where it is in its life (started, stopping, closed), owned by close and the sweep. */
  readonly lifecycle: LifecycleShape
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
  instance.lifecycle.stopping() ? Effect.fail(new InstanceStoppingError({ instanceId: instance.instanceId })) : Effect.void)
