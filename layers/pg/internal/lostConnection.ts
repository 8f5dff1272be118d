/**
 * Schema work on Postgres run again when the connection under it was lost.
 */
import { Effect, Schedule } from "effect"
import type { BatonConfigError, StoreError } from "../../../src/stores/Errors.ts"

/**
 * Runs a schema transaction again when a lost connection failed it (a
 * restart, a terminated backend: the transaction was rolled back, nothing
 * of it stays): up to 5 runs in all, 200 ms apart on the Clock. The
 * migrations and the liveness table are made through it.
 */
export const againOnLostConnection = <A, E extends StoreError | BatonConfigError, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(effect, { while: lostConnection, schedule: Schedule.spaced("200 millis"), times: migrateAttempts - 1 })

/** How many times `migrate` runs when connections are lost under it. */
const migrateAttempts = 5

const lostConnection = (e: StoreError | BatonConfigError): boolean => e._tag === "StoreError" && e.kind === "Connection"
