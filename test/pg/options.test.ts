/**
 * Postgres store options that cannot work are refused when the Layer is
 * built, naming the field and the range — before any connection is tried.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { PgClient, PgStores } from "../../layers/pg/index.ts"
import { url } from "./db.ts"

const tryBuild = <A, E>(layer: Layer.Layer<A, E>) =>
  Layer.build(layer).pipe(
    Effect.scoped,
    Effect.as("built"),
    Effect.catch((e: any) => Effect.succeed(`${e?._tag} ${e?.field ?? ""}: ${e?.message}`)),
    Effect.catchDefect((d) => Effect.succeed(`defect: ${String(d)}`))
  )

describe("PgClient and PgStores options", () => {
  it.live("maxConnections 1e9 is refused, naming the range", () =>
    Effect.gen(function*() {
      assert.match(yield* tryBuild(PgClient.layer({ url, maxConnections: 1e9 })), /^BatonConfigError maxConnections: .*from 1 to 1000/)
    }))

  it.live("a 10,000-character applicationName is refused (Postgres keeps 63 bytes), not a misleading connection failure", () =>
    Effect.gen(function*() {
      assert.match(yield* tryBuild(PgClient.layer({ url, applicationName: "x".repeat(10_000) })), /^BatonConfigError applicationName: .*at most 63/)
      assert.strictEqual(yield* tryBuild(PgClient.layer({ url, applicationName: "x".repeat(63), maxConnections: 1 })), "built")
    }))

  it.live("wakeups \"no\" (not a boolean) is refused", () =>
    Effect.gen(function*() {
      assert.match(yield* tryBuild(PgStores.layer({ url, wakeups: "no" as never })), /^BatonConfigError wakeups: .*true or false/)
    }))
})
