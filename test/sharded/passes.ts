/**
 * What the sharded runtime tests do with the approval workflow: an
 * execution that pauses on one instance and is resumed on the other.
 */
import { assert } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { AnyWorkflow } from "../../src/runtime/Workflow.ts"
import type * as Harness from "../../src/testing/Harness.ts"

/**
 * Executes `wf` (one that pauses once, e.g. `approval`) for `tenantId` on
 * instance 0 and resumes it with "yes" on instance 1; asserts it paused and
 * then finished, and answers the pause's id.
 */
export const pauseThenResume = (h: Harness.Harness, wf: AnyWorkflow, tenantId: string) =>
  Effect.gen(function*() {
    const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId })))
    if (first._tag !== "Paused") return assert.fail(`${tenantId}: the execution did not pause (${first._tag})`)
    const pauseId = first.pauses[0]!.pauseId
    const second = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: "yes", tenantId })))
    assert.strictEqual(second._tag, "Finished", tenantId)
    return pauseId
  })
