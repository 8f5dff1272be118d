/**
 * The budgets a pass gives its steps (`ctx.budgets`): the application's and
 * those of its tree's root workflow, made concrete for the execution. A
 * root's are its own workflow's; a child's are those of the workflow at the
 * top of its chain of parents (`TreeRoot`: a read per level that a child
 * pass adds, only when budgets are declared), so a child's spend on any
 * instance is charged to its root's counters and checked against its
 * root's limits. A root workflow not registered on the instance running
 * the child gives only the application's budgets, with a warning.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import * as Budget from "../../limits/Budget.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import * as TreeRoot from "../children/TreeRoot.ts"
import type { InstanceShape } from "../Instance.ts"

/** The tree's top execution, and its workflow: the pass's own for a root, else the one the top's record names. */
const topOf = (instance: InstanceShape, record: ExecutionRecord, workflow: AnyWorkflow) =>
  Effect.gen(function*() {
    if (record.parentExecutionId === null) return Option.some({ top: record, workflow })
    const top = yield* TreeRoot.topOf(record)
    return Option.flatMap(top, (t) => Option.map(Option.fromUndefinedOr(instance.config.workflows.get(t.workflowName)), (w) => ({ top: t, workflow: w })))
  })

/** Whether the instance's configuration declares any budget, worked out once per configuration (not per pass). */
const declaring = new WeakMap<object, boolean>()
const declaresAny = (config: InstanceShape["config"]): boolean => {
  let any = declaring.get(config)
  if (any === undefined) {
    any = (config.budgets?.length ?? 0) > 0 || [...config.workflows.values()].some((w) => (w.budgets?.length ?? 0) > 0)
    declaring.set(config, any)
  }
  return any
}

/**
 * The budgets of a pass of `record` (running `workflow`).
 *
 * @category internal
 * @since 0.1.0
 */
export const ofPass = (instance: InstanceShape, record: ExecutionRecord, workflow: AnyWorkflow) =>
  Effect.gen(function*() {
    const app = instance.config.budgets ?? []
    // Nothing declared anywhere: no read, no work.
    if (!declaresAny(instance.config)) return []
    const root = yield* topOf(instance, record, workflow)
    if (Option.isNone(root)) {
      yield* Effect.logWarning(
        `execution ${record.executionId}: the workflow at the top of its tree is not registered on this instance (or its record is gone), so only the application's budgets apply to its steps: register the root workflow on every instance that runs its children`
      )
      return Budget.declaredFor(app, { tenantId: record.tenantId, rootExecutionId: record.executionId })
    }
    const declared = [...app, ...(root.value.workflow.budgets ?? [])]
    return Budget.declaredFor(declared, { tenantId: record.tenantId, rootExecutionId: root.value.top.executionId })
  })
