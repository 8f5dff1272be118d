/**
 * The runtime on Postgres, as two processes would run it: two baton
 * instances, each with its own pool and its own wake-up hub, over one schema.
 * A resume on B waits while A holds the tree; when A's pass releases the
 * lease, Postgres's NOTIFY wakes B at once — B polls only every 10 minutes
 * and A's lease runs 30 s, so nothing else could wake it in time.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../src/stores/LeaseWakeups.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("runtime")

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** fork → left (pauses; once answered, waits for `gate`) and right (pauses) → join. */
const gated = (entered: () => void, gate: Promise<void>, runs: Array<string>) =>
  Workflow.make({
    name: "gated",
    version: "1",
    graph: new StateGraph(State)
      .addNode("fork", Workflow.step(async () => ({ log: ["fork"] })))
      .addNode("left", Workflow.step(async (_s, ctx) => {
        const d = interrupt({ side: "left" })
        runs.push(`left@${ctx.instanceId}`)
        entered()
        await gate
        return { log: [`left:${String(d)}`] }
      }))
      .addNode("right", Workflow.step(async (_s, ctx) => {
        const d = interrupt({ side: "right" })
        runs.push(`right@${ctx.instanceId}`)
        return { log: [`right:${String(d)}`] }
      }))
      .addNode("join", Workflow.step(async (_s, ctx) => {
        runs.push(`join@${ctx.instanceId}`)
        return { log: ["join"] }
      }))
      .addEdge(START, "fork")
      .addEdge("fork", "left")
      .addEdge("fork", "right")
      .addEdge(["left", "right"], "join")
      .addEdge("join", END)
  })

/**
 * One "process": PgStores (with NOTIFY wake-ups) on its own pool and hub, and
 * a baton instance over them. `waitingOn(root)` completes once a call of this
 * process waits on its hub for that tree's release (only that tree: the
 * instance's leader loop waits on its own named lease from the start).
 */
const process_ = (instanceId: string, workflow: Workflow.AnyWorkflow) =>
  Effect.gen(function*() {
    const waitedOn = new Set<string>()
    const watchers = new Set<() => void>()
    const hub = makeHub()
    const observed: LeaseWakeupsShape = {
      released: hub.released,
      next: (tenantId, root) =>
        Effect.andThen(
          Effect.sync(() => {
            if (root === undefined) return
            waitedOn.add(root)
            for (const watcher of watchers) watcher()
          }),
          hub.next(tenantId, root)
        )
    }
    const waitingOn = (root: string) =>
      Effect.callback<void>((resume) => {
        const watcher = () => {
          if (waitedOn.has(root)) resume(Effect.void)
        }
        watchers.add(watcher)
        watcher()
        return Effect.sync(() => watchers.delete(watcher))
      })
    const context = yield* Layer.build(
      Baton.layer({ workflows: [workflow], instanceId, waitPoll: "10 minutes", sweepInterval: "10 minutes" }).pipe(
        Layer.provideMerge(PgStores.layer({ url, schema, maxConnections: 4 })),
        Layer.provide(Layer.succeed(LeaseWakeups, observed))
      )
    )
    return { baton: Context.get(context, Baton.Baton), waitingOn }
  })

const within = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
  effect.pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error(`${what}: not within 5 seconds`)) }))

describe("the runtime on Postgres, two processes", () => {
  it.live("a resume waiting on a tree another process holds is woken by NOTIFY when that process releases it", () =>
    Effect.gen(function*() {
      const runs: Array<string> = []
      const entered = yield* Deferred.make<void>()
      let open!: () => void
      const gate = new Promise<void>((resolve) => (open = resolve))
      const wf = gated(() => Deferred.doneUnsafe(entered, Effect.void), gate, runs)
      const a = yield* process_("instance-a", wf)
      const b = yield* process_("instance-b", wf)

      const first = yield* a.baton.execute(wf, { log: [] })
      assert.strictEqual(first._tag, "Paused")
      const pauses = new Map((first as Extract<Baton.ExecutionOutput, { _tag: "Paused" }>).pauses.map((p) => [(p.payload as { side: string }).side, p.pauseId]))

      // A answers the left pause and holds the tree while left waits for the gate.
      const onA = yield* Effect.forkChild(a.baton.resume({ pauseId: pauses.get("left")!, decision: "L" }))
      yield* within("left started on A", Deferred.await(entered))
      // B answers the right pause and waits for the tree's lease.
      const onB = yield* Effect.forkChild(b.baton.resume({ pauseId: pauses.get("right")!, decision: "R" }))
      yield* within("B waiting for the lease", b.waitingOn(first.executionId))

      open()
      const outs = yield* within("both resumes answered", Effect.all([Fiber.join(onA), Fiber.join(onB)]))
      for (const out of outs) {
        assert.strictEqual(out._tag, "Finished")
        assert.sameMembers((out as { output: { log: Array<string> } }).output.log, ["fork", "left:L", "right:R", "join"])
      }
      assert.strictEqual(runs.filter((r) => r.startsWith("join")).length, 1, "join ran once")
    }).pipe(Effect.scoped))
})
