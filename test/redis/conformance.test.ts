/**
 * The exported conformance suites (`baton/testing`) against the Redis store
 * example, on the real Redis at 127.0.0.1:6379: every contract it implements,
 * as two instances (two connections, racing each other) over one key prefix;
 * and the PauseStore suite over the app's composition (`withSqlite`: SQLite
 * pauses whose fenced save checks the Redis leases).
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Redis } from "effect/persistence"
import * as RedisStores from "../../examples/redis-store/RedisStores.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { cleanUp, connection, runPrefix, url } from "./redis.ts"

const prefix = runPrefix("conformance")
const instance = () => RedisStores.layer({ prefix }).pipe(Layer.provide(connection()), Layer.provideMerge(cleanUp(prefix)))
const setup = { name: "redis", layer: instance(), second: instance() }

it.layer(connection())("a Redis server answers at 127.0.0.1:6379", (it) => {
  it.effect("PING", () =>
    Effect.gen(function*() {
      const redis = yield* Redis.Redis
      expect(yield* redis.send("PING")).toBe("PONG")
    }))
})

Conformance.leaseStoreSuite(setup)
Conformance.treeStoreSuite(setup)
Conformance.rateLimitStoreSuite(setup)
Conformance.checkpointStoreSuite({ ...setup, lifecycle: false })

const composedPrefix = runPrefix("conformance-composed")
const path = tempDb("redis-conformance")
const composed = () => RedisStores.withSqlite({ url, path, prefix: composedPrefix }).pipe(Layer.provideMerge(cleanUp(composedPrefix)))
Conformance.pauseStoreSuite({ name: "redis leases, sqlite pauses", layer: composed(), second: composed() })
