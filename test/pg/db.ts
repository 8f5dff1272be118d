/**
 * A Postgres schema of its own for each test file: a random name, created by
 * the first migration that runs in it, dropped (with everything in it) after
 * the file ran — so runs never see each other's rows.
 *
 * The server: `BATON_TEST_PG_URL`, else the machines' local Postgres
 * (127.0.0.1:5432, trust auth, database `test`).
 */
import { Effect } from "effect"
import { afterAll } from "vitest"

export { url, withAdmin } from "./admin.ts"
import { withAdmin } from "./admin.ts"

/** A random lowercase name starting with `prefix`. */
export const randomName = (prefix: string): string =>
  `${prefix}_${Array.from({ length: 10 }, () => "abcdefghijklmnopqrstuvwxyz0123456789"[Math.floor(Math.random() * 36)]).join("")}`

/** A new schema name for this file, dropped after it. Call it at the top level of the file. */
export const testSchema = (name: string): string => testSchemas(name)()

/**
 * A maker of schema names for this file, callable from inside tests: every
 * name it made is dropped after the file. Call it at the top level of the file.
 */
export const testSchemas = (name: string): () => string => {
  const made: Array<string> = []
  afterAll(() => withAdmin((sql) => Effect.forEach(made, (schema) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`, { discard: true })))
  return () => {
    const schema = randomName(`baton_t_${name}`)
    made.push(schema)
    return schema
  }
}
