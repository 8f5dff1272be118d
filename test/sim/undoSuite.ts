/**
 * The durable-undo simulation as a test over one kind of store (a file per
 * store, so vitest runs them side by side). `BATON_UNDO_SIM_SEEDS` sets the
 * seed count (default 20).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { SimulationStore } from "./Simulation.ts"
import { simulateUndo } from "./UndoSimulation.ts"

const seeds = Number(process.env.BATON_UNDO_SIM_SEEDS ?? 20)

export const undoSimulationSuite = (store: SimulationStore) =>
  describe(`durable undo simulation over ${store} stores`, () => {
    it.effect(`${seeds} seeds: every unwound execution undid what took effect once, in reverse order`, () =>
      Effect.gen(function*() {
        let unwound = 0
        let handOffFreezes = 0
        for (let seed = 1; seed <= seeds; seed++) {
          const result = yield* simulateUndo(seed, { store })
          unwound += result.unwound
          handOffFreezes += result.handOffFreezes
          if (result.violations.length > 0) {
            assert.fail(
              `seed ${seed} failed (replay: npm run sim:undo -- --seed ${seed} --store ${store}):\n  ${result.violations.join("\n  ")}\nschedule:\n  ${result.log.join("\n  ")}`
            )
          }
        }
        assert.isAbove(unwound, seeds, "the schedules unwound executions")
        assert.isAbove(handOffFreezes, 0, "the schedules froze instances writing a hand-off")
      }), { timeout: 120_000 })
  })
