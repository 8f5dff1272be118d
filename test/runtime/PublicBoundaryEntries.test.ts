/**
 * What an outside tester got wrong through the package's entry points (the
 * modules `package.json` "exports" maps — `baton`, `baton/memory`,
 * `baton/sqlite`, `baton/pg`, `baton/testing`, `baton/http` — imported here
 * from their sources): each misuse is a typed error that names what was
 * wrong and says what to do, never a defect or a silent default.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { createServer, type Server } from "node:net"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, Workflow } from "../../src/index.ts"
import { Harness } from "../../src/testing/index.ts"
import { MemoryLimiters, MemoryStores } from "../../layers/memory/index.ts"
import { PgLimiters, PgStores } from "../../layers/pg/index.ts"
import { SqliteLimiters, SqliteStores } from "../../layers/sqlite/index.ts"

/** Bypasses the types, as a JavaScript caller does. */
const untyped = (value: unknown) => value as any

/** The typed failure of `effect` (a success or a defect fails the test, naming `what`). */
const typedFailure = <A, E>(effect: Effect.Effect<A, E>, what: string) =>
  Effect.flip(effect).pipe(
    Effect.catchDefect((defect) => Effect.die(new Error(`${what}: a defect, not a typed error: ${String(defect)}`))),
    Effect.catch(() => Effect.die(new Error(`${what}: succeeded`)))
  ) as Effect.Effect<{ readonly _tag: string; readonly field: string; readonly message: string }>

/** Builds `layer` and answers its typed failure. */
const buildFailure = <A, E>(layer: Layer.Layer<A, E>, what: string) => typedFailure(Layer.build(layer).pipe(Effect.scoped), what)

/** The failure must be `BatonConfigError` naming `field`, its message holding every one of `says`. */
const expectConfigError = <A, E>(layer: Layer.Layer<A, E>, field: string, says: ReadonlyArray<string>, what: string) =>
  Effect.gen(function*() {
    const error = yield* buildFailure(layer, what)
    assert.strictEqual(error._tag, "BatonConfigError", `${what}: ${error.message}`)
    assert.strictEqual(error.field, field, `${what}: ${error.message}`)
    for (const s of says) assert.include(error.message, s, what)
  })

const State = Annotation.Root({ x: Annotation<number>() })

/** One step that pauses with `payload`. */
const pausing = (name: string, payload: () => unknown) =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State)
      .addNode("ask", Workflow.step(async () => {
        interrupt(payload())
        return {}
      }))
      .addEdge(START, "ask")
      .addEdge("ask", END)
  })

/** Lets every request through, as tenant "t". */
const authorize = () => Effect.succeed({ tenantId: "t" })

/** Every store over one fresh in-memory state, as `baton/memory` gives them. */
const memory = Layer.fresh(MemoryStores.layer)

describe("the entry points refuse misuse with a typed error", () => {
  describe("store Layer options with an unknown field fail the build naming it", () => {
    it.effect("SqliteStores.layer, layerLeaseStore, SqliteLimiters.layer: `pth`, `synchronus`", () =>
      Effect.gen(function*() {
        yield* expectConfigError(SqliteStores.layer(untyped({ pth: ":memory:" })), "pth", ["not an option", "`path`"], "SqliteStores.layer({ pth })")
        yield* expectConfigError(
          SqliteStores.layer(untyped({ path: ":memory:", synchronus: "NORMAL" })),
          "synchronus",
          ["not an option", "`synchronous`"],
          "SqliteStores.layer({ synchronus })"
        )
        yield* expectConfigError(SqliteStores.layerLeaseStore(untyped({ path: ":memory:", tablePrefx: "x_" })), "tablePrefx", ["`tablePrefix`"], "layerLeaseStore")
        yield* expectConfigError(SqliteLimiters.layer(untyped({ path: ":memory:", probeLeas: "1 second" })), "probeLeas", ["`probeLease`"], "SqliteLimiters.layer")
        yield* expectConfigError(
          SqliteStores.layer(untyped({ path: ":memory:", wakeups: { pollIntervall: "1 second" } })),
          "wakeups.pollIntervall",
          ["`pollInterval`"],
          "SqliteStores.layer({ wakeups: { pollIntervall } })"
        )
        yield* expectConfigError(SqliteStores.layer(untyped(":memory:")), "options", ["must be an object"], "SqliteStores.layer(\":memory:\")")
      }))

    it.effect("SqliteStores.layer with only known fields still builds", () =>
      Effect.gen(function*() {
        const built = yield* Effect.exit(Layer.build(SqliteStores.layer({ path: ":memory:", synchronous: "FULL", tablePrefix: "t_" })).pipe(Effect.scoped))
        assert.strictEqual(built._tag, "Success", String(built))
      }))

    it.effect("PgStores.layer, layerTreeStore, PgLimiters.layer: refused before any connection", () =>
      Effect.gen(function*() {
        // A port nothing answers on: a build that tried to connect would fail otherwise (or wait).
        const url = "postgres://postgres@127.0.0.1:1/none"
        yield* expectConfigError(PgStores.layer(untyped({ url, maxConections: 5 })), "maxConections", ["`maxConnections`"], "PgStores.layer")
        yield* expectConfigError(PgStores.layer(untyped({ ulr: url })), "ulr", ["`url`"], "PgStores.layer({ ulr })")
        yield* expectConfigError(PgStores.layerTreeStore(untyped({ url, shema: "s" })), "shema", ["`schema`"], "layerTreeStore")
        yield* expectConfigError(PgLimiters.layer(untyped({ url, idleTimeToLiv: "1 hour" })), "idleTimeToLiv", ["`idleTimeToLive`"], "PgLimiters.layer")
      }))

    it.effect("MemoryLimiters.layer: `idleTimeTolive`", () =>
      Effect.gen(function*() {
        yield* expectConfigError(MemoryLimiters.layer(untyped({ idleTimeTolive: "1 hour" })), "idleTimeTolive", ["`idleTimeToLive`"], "MemoryLimiters.layer")
      }))
  })

  describe("the test Harness", () => {
    const harnessOver = (instances: unknown) =>
      Harness.make({ instances: untyped(instances), baton: { workflows: [] } }).pipe(
        Effect.provide(memory)
      )

    it.effect("instances that are not a whole number ≥ 1 fail naming `instances`", () =>
      Effect.gen(function*() {
        for (const instances of [0, -1, 1.5, "2", undefined]) {
          const error = yield* typedFailure(Effect.scoped(harnessOver(instances)), `instances: ${String(instances)}`)
          assert.strictEqual(error._tag, "BatonConfigError", error.message)
          assert.strictEqual(error.field, "instances", error.message)
          assert.include(error.message, "whole number ≥ 1")
        }
      }))

    it.effect("run, runIn, advance and the instance calls refuse a bad argument with InvalidInputError naming it", () =>
      Effect.gen(function*() {
        const h = yield* harnessOver(2)
        const cases: ReadonlyArray<readonly [Effect.Effect<unknown, unknown>, string, string, string]> = [
          [h.run(untyped(5), untyped(undefined)), "index", "Harness.run", "run(5)"],
          [h.run(0, untyped(5)), "f", "a function", "run(0, 5)"],
          [h.run(0, untyped(() => 5)), "f", "an Effect", "run(0, () => 5)"],
          [h.runIn(0, untyped(5)), "effect", "an Effect", "runIn(0, 5)"],
          [h.runIn(untyped("0"), Effect.void), "index", "0 or 1", "runIn(\"0\", …)"],
          [h.advance(untyped("abc")), "duration", "a duration", "advance(\"abc\")"],
          [h.advance(-1), "duration", "≥ 0", "advance(-1)"],
          [h.kill(2), "index", "0 or 1", "kill(2)"],
          [h.freeze(untyped(undefined)), "index", "Harness.freeze", "freeze()"],
          [h.restart(-1), "index", "Harness.restart", "restart(-1)"]
        ]
        for (const [effect, field, says, what] of cases) {
          const error = yield* typedFailure(effect, what)
          assert.strictEqual(error._tag, "InvalidInputError", `${what}: ${error.message}`)
          assert.strictEqual(error.field, field, `${what}: ${error.message}`)
          assert.include(error.message, says, what)
        }
        // `instance` answers at once: it throws the same typed error.
        for (const index of [2, -1, 0.5, untyped("1")]) {
          const thrown = (() => {
            try {
              h.instance(index)
            } catch (e) {
              return e as { readonly _tag?: string; readonly field?: string; readonly message: string }
            }
          })()
          assert.strictEqual(thrown?._tag, "InvalidInputError", `instance(${String(index)}): ${thrown?.message}`)
          assert.strictEqual(thrown?.field, "index")
          assert.include(thrown?.message, "0 or 1")
        }
        // Refused before anything moved: the instances are still there and alive.
        assert.deepStrictEqual(h.instances.map((i) => i.state), ["alive", "alive"])
      }).pipe(Effect.scoped))
  })

  it.effect("Workflow.make() without options: Baton.layer fails with BatonConfigError saying what to pass", () =>
    Effect.gen(function*() {
      const made = yield* Effect.try(() => Workflow.make(untyped(undefined))).pipe(
        Effect.catch((thrown) => Effect.die(new Error(`Workflow.make() threw: ${String(thrown)}`)))
      )
      const layer = Baton.layer({ workflows: [made] }).pipe(Layer.provide(memory))
      yield* expectConfigError(layer, "workflows", ["Workflow.make({ name, version, graph })"], "Workflow.make()")
    }))

  it.effect("baton/http on a port in use fails naming host:port and saying it is in use", () =>
    Effect.gen(function*() {
      const taken = yield* Effect.acquireRelease(
        Effect.callback<Server>((resume) => {
          const server = createServer()
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const port = (taken.address() as { port: number }).port
      const app = BatonHttp.layerServer({ port, workflows: [], authorize }).pipe(
        Layer.provide(Baton.layer({ workflows: [] })),
        Layer.provide(memory)
      )
      const error = yield* buildFailure(app, "layerServer on a taken port")
      assert.strictEqual(error._tag, "BatonConfigError", error.message)
      assert.strictEqual(error.field, "port", error.message)
      assert.include(error.message, `127.0.0.1:${port}`)
      assert.include(error.message, "already in use")
      // A free port still serves.
      const served = yield* HttpServer.HttpServer.pipe(
        Effect.provide(BatonHttp.layerServer({ port: 0, workflows: [], authorize }).pipe(Layer.provide(Baton.layer({ workflows: [] })), Layer.provide(memory)))
      )
      assert.isAbove(BatonHttp.port(served), 0)
    }).pipe(Effect.scoped))

  it.effect("a pause payload holding a BigInt fails naming the pause's step and saying it must be JSON-storable", () =>
    Effect.gen(function*() {
      const asPromise = pausing("bigint-pause", () => ({ amount: 10n }))
      const asEffect = Workflow.make({
        name: "bigint-pause-effect",
        version: "1",
        graph: new StateGraph(State)
          .addNode("ask", Workflow.effectStep(() => Effect.sync(() => interrupt({ amount: 10n }))))
          .addEdge(START, "ask")
          .addEdge("ask", END)
      })
      for (const workflow of [asPromise, asEffect]) {
        const error = yield* Baton.Baton.use((b) => Effect.flip(b.execute(workflow, { x: 1 }))).pipe(
          Effect.provide(Baton.layer({ workflows: [workflow] }).pipe(Layer.provide(memory)))
        )
        const message = (error as { message: string }).message
        assert.strictEqual((error as { _tag: string })._tag, "ExecutionFailedError", message)
        for (const says of ["interrupt", "step \"ask\"", "JSON-storable", "BigInt"]) assert.include(message, says, workflow.name)
      }
    }))

  it.effect("a step launching a child its workflow does not declare is told to add it to the parent's `children`", () =>
    Effect.gen(function*() {
      const child = pausing("undeclared-child", () => "never")
      const parent = Workflow.make({
        name: "careless-parent",
        version: "1",
        graph: new StateGraph(State)
          .addNode("fan", Workflow.step(async (_s, ctx) => {
            await ctx.launch(child, [{ x: 1 }])
            return {}
          }))
          .addEdge(START, "fan")
          .addEdge("fan", END)
      })
      const error = yield* Baton.Baton.use((b) => Effect.flip(b.execute(parent, { x: 1 }))).pipe(
        Effect.provide(Baton.layer({ workflows: [parent] }).pipe(Layer.provide(memory)))
      )
      const message = (error as { message: string }).message
      assert.include(message, "\"undeclared-child\"")
      assert.include(message, "children")
      assert.include(message, "\"careless-parent\"")
      assert.notInclude(message, "Add it to the workflows given to Baton.layer")
    }))
})
