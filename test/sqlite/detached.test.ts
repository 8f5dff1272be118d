/**
 * A SQLite file deleted (or replaced) while instances have it open: the
 * stores notice (the file's identity, device and inode, is checked by ping
 * and before each transaction or statement outside one), ping fails with a
 * permanent `StoreError` of kind "Config", readiness turns Unhealthy, and no
 * write goes to the detached file.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { storeFailure } from "../storeErrors.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { makeSideEffects, slow } from "../runtime/fixtures.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("detached")
let n = 0

const unlinkAll = (path: string) => {
  for (const suffix of ["", "-wal", "-shm"]) Fs.rmSync(path + suffix, { force: true })
}


const open = (path: string, scope: Scope.Scope) =>
  Effect.map(Layer.buildWithScope(SqliteStores.layer({ path, busyTimeout: 0 }), scope), (ctx) => ({
    leases: Context.get(ctx, LeaseStore),
    records: Context.get(ctx, RecordStore)
  }))

describe("a SQLite file deleted while open", () => {
  it.effect("ping fails with a permanent Config StoreError that says the file was deleted, and a write is refused", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, `gone-${++n}.db`)
      const scope = yield* Scope.make()
      const { leases, records } = yield* open(path, scope)
      yield* leases.ping
      assert.isTrue(Option.isSome(yield* leases.acquire("default", "root-1", "a", 30_000, 0)))

      unlinkAll(path)

      const ping = yield* storeFailure(leases.ping)
      assert.strictEqual(ping.kind, "Config")
      assert.isFalse(ping.transient)
      assert.match(ping.message, /deleted or replaced/)
      assert.notMatch(ping.message, /can be retried/)
      assert.strictEqual((yield* storeFailure(records.ping)).kind, "Config")

      const write = yield* storeFailure(leases.acquire("default", "root-2", "a", 30_000, 0))
      assert.strictEqual(write.kind, "Config")
      assert.isFalse(Fs.existsSync(path), "nothing re-created the file")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a file replaced by a new database at the same path is noticed by the old instance, while the new one works", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, `replaced-${++n}.db`)
      const scope = yield* Scope.make()
      const old = yield* open(path, scope)
      assert.isTrue(Option.isSome(yield* old.leases.acquire("default", "root-1", "old", 30_000, 0)))

      unlinkAll(path)
      const fresh = yield* open(path, scope)
      yield* fresh.leases.ping
      assert.isTrue(Option.isNone(yield* fresh.leases.get("default", "root-1")), "the new file is empty")

      assert.strictEqual((yield* storeFailure(old.leases.ping)).kind, "Config")
      const refused = yield* storeFailure(old.leases.acquire("default", "root-2", "old", 30_000, 0))
      assert.strictEqual(refused.kind, "Config")
      assert.isTrue(Option.isNone(yield* fresh.leases.get("default", "root-2")), "the old instance wrote nothing into the new file")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("readiness of an instance on the deleted file turns Unhealthy, naming the deleted file", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, "ready.db")
      const wf = slow(makeSideEffects())
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      assert.strictEqual((yield* Fiber.join(yield* h.run(0, (b) => b.checkReadiness))).status, "Healthy")
      unlinkAll(path)
      const report = yield* Fiber.join(yield* h.run(0, (b) => b.checkReadiness))
      assert.strictEqual(report.status, "Unhealthy")
      assert.match(report.components.find((c) => c.name === "lease-store")!.message, /deleted or replaced/)
    }).pipe(Effect.provide(Layer.fresh(SqliteStores.layer({ path: Path.join(dir, "ready.db"), busyTimeout: 0 })))))
})
