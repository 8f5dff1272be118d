import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { simulate } from "./Simulation.ts"

const seeds = Number(process.env.BATON_SIM_SEEDS ?? 200)

describe("seeded fault simulation", () => {
  it.effect(`${seeds} seeds: nothing lost, nothing twice, no stale write accepted`, () =>
    Effect.gen(function*() {
      let executions = 0
      for (let seed = 1; seed <= seeds; seed++) {
        const result = yield* simulate(seed)
        executions += result.executions
        if (result.violations.length > 0) {
          assert.fail(
            `seed ${seed} failed (replay: npm run sim -- --seed ${seed}):\n  ${result.violations.join("\n  ")}\nschedule:\n  ${result.log.join("\n  ")}`
          )
        }
      }
      assert.isAbove(executions, seeds, "the schedules started executions")
    }), { timeout: 600_000 })
})
