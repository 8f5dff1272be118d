/**
 * `SqliteWakeups`' poll and kept rows, checked: by the Layer itself and by
 * `SqliteStores` for its `wakeups` object.
 */
import { Duration, Effect } from "effect"
import * as Options from "../../../src/stores/internal/options.ts"

/** How often the watcher reads: 5 ms (more often only spins on the file) to 1 minute (a handover would wait that long). */
const pollRange = Options.duration({ min: 5, max: 60_000, minWhy: "reading more often only spins on the file", maxWhy: "a handover waits that long" })

/** How many release rows are kept: 1 to 1,000,000. */
const keepRange = Options.whole({ min: 1, max: 1_000_000 })

/**
 * The poll and the rows kept, checked (fields named under `prefix`, e.g.
 * `"wakeups."` when given as `SqliteStores`' `wakeups` object).
 */
export const checkOptions = (
  options: { readonly pollInterval?: Duration.Input | undefined; readonly keep?: number | undefined },
  prefix = ""
) =>
  Effect.gen(function*() {
    const pollMillis = yield* Options.setting(`${prefix}pollInterval`, options.pollInterval, pollRange, 25)
    const keep = yield* Options.setting(`${prefix}keep`, options.keep, keepRange, 10_000)
    return { pollInterval: Duration.millis(pollMillis), keep }
  })
