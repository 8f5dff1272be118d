/**
 * `npm run sim -- --seeds N` (seeds 1..N) or `npm run sim -- --seed S` (one
 * seed, printing its schedule); `--store sqlite` runs over the SQLite stores
 * (default `memory`). Exits non-zero on the first failing seed and
 * prints it so it can be replayed.
 */
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { simulate } from "./Simulation.ts"
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
  let children = 0
  for (let seed = first; seed <= last; seed++) {
    const result = yield* simulate(seed, { store }).pipe(Effect.provide(TestClock.layer()))
    executions += result.executions
    children += result.children
    if (verbose) console.log(`seed ${seed}:\n  ${result.log.join("\n  ")}`)
    if (result.violations.length > 0) {
      console.error(`seed ${seed} FAILED (replay: npm run sim -- --seed ${seed} --store ${store}):\n  ${result.violations.join("\n  ")}`)
      return false
    }
    // The same seed drives the durable-undo model (its own file, `npm run sim:undo` alone).
    const undo = yield* simulateUndo(seed, { store }).pipe(Effect.provide(TestClock.layer()))
    executions += undo.executions
    if (undo.violations.length > 0) {
      console.error(`seed ${seed} FAILED in the undo model (replay: npm run sim:undo -- --seed ${seed} --store ${store}):\n  ${undo.violations.join("\n  ")}`)
      if (verbose) console.error(`  ${undo.log.join("\n  ")}`)
      return false
    }
    if (!verbose && seed % 100 === 0) console.log(`${seed - first + 1} seeds passed (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  }
  const seconds = (Date.now() - started) / 1000
  console.log(`${last - first + 1} seeds passed over ${store}, ${executions} executions (${children} launched children), in ${seconds.toFixed(1)} s`)
  return true
})

Effect.runPromise(Effect.scoped(main)).then(
  (ok) => {
    process.exitCode = ok ? 0 : 1
  },
  (error) => {
    console.error(error)
    process.exitCode = 1
  }
)
