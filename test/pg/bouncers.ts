/**
 * The two pgbouncers `.ci/run` starts in front of the test database:
 * transaction pooling on 127.0.0.1:6432, session pooling on 127.0.0.1:6433
 * (`BATON_TEST_PGBOUNCER_URL` / `BATON_TEST_PGBOUNCER_SESSION_URL` name
 * others). `requireBouncers` fails — never skips — when one is not there,
 * saying how to start it.
 */
import { Effect } from "effect"
import { createConnection } from "node:net"
import { afterAll } from "vitest"
import { randomName, withAdmin } from "./db.ts"

export const bouncerUrls = {
  transaction: process.env.BATON_TEST_PGBOUNCER_URL ?? "postgres://postgres@127.0.0.1:6432/test",
  session: process.env.BATON_TEST_PGBOUNCER_SESSION_URL ?? "postgres://postgres@127.0.0.1:6433/test"
} as const

const listening = (target: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(target)
    const socket = createConnection({ host: hostname, port: Number(port) })
    socket.setTimeout(3_000)
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
    socket.once("error", () => resolve(false))
  })

/** Fails unless both poolers accept connections. */
export const requireBouncers = async (): Promise<void> => {
  for (const [mode, target] of Object.entries(bouncerUrls)) {
    if (!(await listening(target))) {
      throw new Error(
        `pgbouncer in ${mode} mode is not listening at ${target.replace(/\/\/[^@]*@/, "//")}: run .ci/run (it installs pgbouncer and starts both poolers), or start one as its pgbouncer section shows`
      )
    }
  }
}

/** `requireBouncers` as an Effect. */
export const bouncersUp = Effect.promise(requireBouncers)

/** A table prefix of this file's own in the test database's public schema (a schema cannot be set through a pooler): its tables are dropped after the file. */
export const testPrefix = (name: string): string => {
  const prefix = `${randomName(`bt_${name}`)}_`
  afterAll(() =>
    withAdmin((sql) =>
      Effect.flatMap(
        sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE ${`${prefix}%`}`,
        (tables) => Effect.forEach(tables, (t) => sql`DROP TABLE IF EXISTS ${sql(t.tablename)} CASCADE`, { discard: true })
      )
    )
  )
  return prefix
}
