/**
 * The seeded simulation as a test over one kind of store (a file per store,
 * so vitest runs them side by side). `BATON_SIM_SEEDS` sets the seed count.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { simulate, type SimulationStore } from "./Simulation.ts"

const seeds = Number(process.env.BATON_SIM_SEEDS ?? 200)

export const simulationSuite = (store: SimulationStore) =>
  describe(`seeded fault simulation over ${store} stores`, () => {
    it.effect(`${seeds} seeds: nothing lost, nothing twice, no stale write accepted`, () =>
      Effect.gen(function*() {
        let executions = 0
        const timers = { naps: 0, waits: 0, signals: 0 }
        for (let seed = 1; seed <= seeds; seed++) {
          const result = yield* simulate(seed, { store })
          executions += result.executions
          timers.naps += result.timers.naps
          timers.waits += result.timers.waits
          timers.signals += result.timers.signals
          if (result.violations.length > 0) {
            assert.fail(
              `seed ${seed} failed (replay: npm run sim -- --seed ${seed} --store ${store}):\n  ${result.violations.join("\n  ")}\nschedule:\n  ${result.log.join("\n  ")}`
            )
          }
        }
        assert.isAbove(executions, seeds, "the schedules started executions")
        assert.isTrue(timers.naps > 0 && timers.waits > 0 && timers.signals > 0, `the schedules slept, waited and signalled: ${JSON.stringify(timers)}`)
      }), { timeout: 600_000 })
  })
