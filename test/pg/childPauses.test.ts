/**
 * A pause inside a child reaches the parent's caller, on Postgres, as two
 * processes run it: two baton instances, each with its own pool and its own
 * wake-up hub (NOTIFY across them), over one schema, on the real clock. A
 * launches; B is the only one that claims queued children. Nothing polls
 * (`waitPoll` and `sweepInterval` are 10 minutes): every hand-over below is
 * a NOTIFY, so each step is answered within seconds or the test fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Schedule } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import type { Placement } from "../../src/runtime/Children.ts"
import { askingChild, type AskLog, fanning } from "../runtime/children/childPauseCases.ts"
import { testSchemas, url } from "./db.ts"

const schemas = testSchemas("child_pauses")

const instance = (schema: string, instanceId: string, workflow: ReturnType<typeof fanning>, claims: boolean) =>
  Effect.map(
    Layer.build(
      Baton.layer({ workflows: [workflow], instanceId, waitPoll: "10 minutes", sweepInterval: "10 minutes", ...(claims ? {} : { maxClaimedChildren: 0 }) }).pipe(
        Layer.provide(PgStores.layer({ url, schema, maxConnections: 4 }))
      )
    ),
    (ctx) => Context.get(ctx, Baton.Baton)
  )

const within = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
  effect.pipe(Effect.timeoutOrElse({ duration: "15 seconds", orElse: () => Effect.die(new Error(`${what}: not within 15 seconds`)) }))

const paused = (out: Baton.ExecutionOutput) => {
  assert.strictEqual(out._tag, "Paused")
  return (out as Extract<Baton.ExecutionOutput, { _tag: "Paused" }>).pauses
}

describe("a child's pause reaches the parent's caller on Postgres, two processes", () => {
  for (const [top, mid] of [["any", undefined], ["parent", undefined], ["any", "parent"], ["parent", "any"]] as ReadonlyArray<readonly [Placement, Placement | undefined]>) {
    const shape = mid === undefined ? `placement ${top}` : `nested: root ${top} → child ${mid} → grandchild`
    it.live(`${shape}: the caller on A sees the child's pause as the root's, answers it on A, and the tree finishes`, () =>
      Effect.gen(function*() {
        const schema = schemas()
        const log: AskLog = { answered: [], worked: [] }
        const leaf = askingChild(log, "10 millis")
        const root = mid === undefined ? fanning("root", leaf, top) : fanning("root", fanning("middle", leaf, mid), top)
        const a = yield* instance(schema, "instance-a", root, false)
        const b = yield* instance(schema, "instance-b", root, true)
        const out = yield* within("the child's pause reached the root's caller", a.execute(root, { items: ["x"], answers: [] }))
        const [pause, ...more] = paused(out)
        assert.strictEqual(more.length, 0)
        assert.deepStrictEqual(pause!.payload, { question: "x?" })
        assert.strictEqual(pause!.child?.depth, mid === undefined ? 2 : 3)
        const listed = yield* b.pendingPauses({ threadId: out.threadId })
        assert.deepStrictEqual(listed.map((p) => [p.pauseId, p.executionId, p.child?.executionId]), [[pause!.pauseId, out.executionId, pause!.child!.executionId]])
        const status = yield* a.status(out.executionId)
        assert.deepStrictEqual(status.pendingPauses.map((p) => p.pauseId), [pause!.pauseId])
        const done = yield* within("the answer finished the tree", a.resume({ pauseId: pause!.pauseId, decision: "ok" }))
        assert.strictEqual(done._tag, "Finished")
        assert.deepStrictEqual((done as { output: { answers: Array<string> } }).output.answers, ["x:ok"])
        assert.strictEqual(log.answered.length, 1)
        // A queued child ran on B (the only claimer), before and after its answer.
        if (top === "any" || mid === "any") assert.match(log.answered[0]!, /@instance-b$/)
        else assert.match(log.answered[0]!, /@instance-a$/)
      }).pipe(Effect.scoped))
  }

  it.live("cancel on B of the root while its queued child rests at a pause on B ends both cancelled", () =>
    Effect.gen(function*() {
      const schema = schemas()
      const log: AskLog = { answered: [], worked: [] }
      const root = fanning("root", askingChild(log, "10 millis"), "any")
      const a = yield* instance(schema, "instance-a", root, false)
      const b = yield* instance(schema, "instance-b", root, true)
      const out = yield* within("paused", a.execute(root, { items: ["x"], answers: [] }))
      const [pause] = paused(out)
      assert.isTrue((yield* b.cancel(out.threadId)).cancelled)
      // Its claimer on B ends it (asked to stop, handed back to the queue): read until it has.
      const child = yield* within("the child ended", b.status(pause!.child!.executionId).pipe(
        Effect.repeat({ until: (s) => s.status !== "Paused" && s.status !== "Running", schedule: Schedule.spaced("50 millis") })
      ))
      assert.strictEqual(child.status, "Cancelled")
      assert.strictEqual((yield* a.status(out.executionId)).status, "Cancelled")
      assert.deepStrictEqual(log.answered, [])
    }).pipe(Effect.scoped))
})
