/**
 * A one-connection client to the test database, for tests and benchmarks
 * (no vitest here: the benchmarks run as plain scripts).
 *
 * The server: `BATON_TEST_PG_URL`, else the machines' local Postgres
 * (127.0.0.1:5432, trust auth, database `test`).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"

export const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** Runs `f` on a one-connection client to the test database. */
export const withAdmin = <A, E>(f: (sql: PgClient.PgClient) => Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )
