/**
 * `npm run sim:undo -- --seeds N [--store sqlite]` or `--seed S` (printing its schedule): the durable-undo simulation.
 */
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { simulateUndo } from "./UndoSimulation.ts"

const arg = (name: string) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}
const one = arg("--seed")
const first = one === undefined ? 1 : Number(one)
const last = one === undefined ? Number(arg("--seeds") ?? 100) : Number(one)
const store = arg("--store") ?? "memory"
if (store !== "memory" && store !== "sqlite") throw new Error(`--store must be memory or sqlite, got ${store}`)
const verbose = one !== undefined || process.argv.includes("--verbose")

const main = Effect.gen(function*() {
  const started = Date.now()
  let executions = 0
  let unwound = 0
  let childrenUndone = 0
  let handOffFreezes = 0
  for (let seed = first; seed <= last; seed++) {
    const result = yield* simulateUndo(seed, { store }).pipe(Effect.provide(TestClock.layer()))
    executions += result.executions
    unwound += result.unwound
    childrenUndone += result.childrenUndone
    handOffFreezes += result.handOffFreezes
    if (verbose) console.log(`seed ${seed}:\n  ${result.log.join("\n  ")}`)
    if (result.violations.length > 0) {
      console.error(`seed ${seed} FAILED (replay: npm run sim:undo -- --seed ${seed} --store ${store}):\n  ${result.violations.join("\n  ")}`)
      return false
    }
    if (!verbose && seed % 100 === 0) console.log(`${seed - first + 1} seeds passed (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  }
  console.log(`${last - first + 1} undo seeds passed over ${store}, ${executions} executions (${unwound} unwound, ${childrenUndone} child undos run by their parents, ${handOffFreezes} instances frozen writing a hand-off), in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return true
})

Effect.runPromise(Effect.scoped(main)).then((ok) => {
  process.exitCode = ok ? 0 : 1
}, (error) => {
  console.error(error)
  process.exitCode = 1
})
