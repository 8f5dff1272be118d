/**
 * Postgres through pgbouncer (transaction mode on 127.0.0.1:6432, session
 * mode on 127.0.0.1:6433; `.ci/run` starts both): what a pooler refuses is
 * refused truthfully at build, naming the option to change, and what it
 * allows works — the liveness lock in session mode, the wake-ups falling
 * back to polling in transaction mode.
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { PgClient } from "../../layers/pg/index.ts"
import { bouncerUrls, requireBouncers } from "./bouncers.ts"
import { randomName } from "./db.ts"

beforeAll(requireBouncers, 20_000)

describe("a schema through pgbouncer", () => {
  for (const mode of ["transaction", "session"] as const) {
    it.effect(`${mode} mode refuses the search_path startup parameter: a BatonConfigError on schema saying what to do, not a retryable connection error`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(Layer.build(PgClient.layer({ url: bouncerUrls[mode], schema: randomName("baton_t_pgb") })).pipe(Effect.scoped))
        assert.strictEqual(error._tag, "BatonConfigError", error.message)
        assert.deepInclude(error, { field: "schema" })
        assert.match(error.message, /search_path.*tablePrefix/)
      }))
  }
})
