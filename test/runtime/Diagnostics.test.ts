/**
 * `Diagnostics.describe` (each value's source: code, environment, default) and
 * `Diagnostics.check` (one test per warning id that needs no server; the
 * Postgres ones are in test/pg/probe.test.ts): each warning appears exactly for
 * the configuration it is about, and a sound configuration gets none.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { MemoryChildQueueStore, MemoryProbe, MemoryState } from "../../layers/memory/index.ts"
import { SqliteProbe } from "../../layers/sqlite/index.ts"
import { mountOf } from "../../layers/sqlite/internal/mounts.ts"
import { Baton, BatonConfig, Diagnostics } from "../../src/index.ts"
import { tempDir } from "../sqlite/tmp.ts"

const env = (vars: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(vars))
const queue = MemoryChildQueueStore.layer.pipe(Layer.provide(MemoryState.layer))
const ids = (report: Diagnostics.CheckReport) => report.warnings.map((w) => w.id)
const configOf = (options: BatonConfig.BatonConfigOptions) => Effect.runSync(BatonConfig.make(options))

describe("Diagnostics.describe", () => {
  it.effect("every option with its value and source: code over environment over default", () =>
    Effect.gen(function*() {
      const { settings, config } = yield* Baton.describe({ lease: "20 seconds", tenantQuota: 3 })
      const byField = Object.fromEntries(settings.map((s) => [s.field, s]))
      assert.deepStrictEqual(Object.keys(byField).sort(), [...Object.keys(BatonConfig.configKeys), "providers", "budgets"].sort())
      assert.deepInclude(byField.lease, { key: "BATON_LEASE", value: 20_000, source: "code", shown: "20s" })
      // the environment's lease is overridden by code; its sweep interval is taken
      assert.deepInclude(byField.sweepInterval, { value: 15_000, source: "environment" })
      assert.deepInclude(byField.tenantQuota, { value: 3, source: "code" })
      assert.deepInclude(byField.pauseRetention, { value: BatonConfig.defaults.pauseRetentionMillis, source: "default" })
      // a third of the code's lease: a default derived from it
      assert.deepInclude(byField.renewEvery, { value: Math.floor(20_000 / 3), source: "default" })
      assert.deepInclude(byField.maxConcurrentSteps, { value: undefined, source: "default", shown: "unset: no cap" })
      assert.deepInclude(byField.providers, { key: undefined, source: "default" })
      assert.deepInclude(byField.budgets, { key: undefined, source: "default", shown: "unset: none" })
      assert.deepInclude(byField.pseudonymKey, { key: "BATON_PSEUDONYM_KEY", source: "default", shown: "unset: a key per execution tree" })
      assert.strictEqual(config.leaseMillis, 20_000)
      assert.strictEqual(config.sweepMillis, 15_000)
    }).pipe(Effect.provide(env({ BATON_LEASE: "40 seconds", BATON_SWEEP_INTERVAL: "15 seconds" }))))

  it.effect("a value that cannot work fails naming the field, as the Layers do", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Diagnostics.describe())
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "renewEvery")
    }).pipe(Effect.provide(env({ BATON_LEASE: "10 seconds", BATON_RENEW_EVERY: "20 seconds" }))))
})

describe("Diagnostics.check", () => {
  it.effect("the defaults over a memory store with one process: no warning", () =>
    Effect.gen(function*() {
      const report = yield* Baton.check({ instances: 1 })
      assert.deepStrictEqual(ids(report), [])
      assert.deepStrictEqual(report.stores, { _tag: "Memory" })
    }).pipe(Effect.provide(Layer.merge(MemoryProbe.layer, queue))))

  it.effect("memory-stores-several-processes: from `instances`, or BATON_INSTANCES", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(ids(yield* Diagnostics.check({ instances: 3 })), ["memory-stores-several-processes"])
      const fromEnv = yield* Diagnostics.check().pipe(Effect.provide(env({ BATON_INSTANCES: "2" })))
      assert.deepStrictEqual(ids(fromEnv), ["memory-stores-several-processes"])
      assert.match(fromEnv.warnings[0]!.message, /2 processes.*SqliteStores.*PgStores/)
      assert.strictEqual(fromEnv.instances, 2)
    }).pipe(Effect.provide(Layer.merge(MemoryProbe.layer, queue))))

  it.effect("sweep-interval-exceeds-lease", () =>
    Effect.gen(function*() {
      const report = yield* Diagnostics.check({ config: configOf({ lease: "10 seconds", sweepInterval: "20 seconds" }) })
      assert.deepStrictEqual(ids(report), ["sweep-interval-exceeds-lease"])
      assert.match(report.warnings[0]!.message, /up to 30s/)
      assert.deepStrictEqual(ids(yield* Diagnostics.check({ config: configOf({ lease: "10 seconds", sweepInterval: "10 seconds" }) })), [])
    }).pipe(Effect.provide(queue)))

  it.effect("renew-at-least-half-lease", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(ids(yield* Diagnostics.check({ config: configOf({ lease: "30 seconds", renewEvery: "15 seconds" }) })), [
        "renew-at-least-half-lease"
      ])
      assert.deepStrictEqual(ids(yield* Diagnostics.check({ config: configOf({ lease: "30 seconds", renewEvery: "14 seconds" }) })), [])
    }).pipe(Effect.provide(queue)))

  it.effect("request-retention-exceeds-pause-retention", () =>
    Effect.gen(function*() {
      const report = yield* Diagnostics.check({ config: configOf({ requestRetention: "2 days", pauseRetention: "1 day" }) })
      assert.deepStrictEqual(ids(report), ["request-retention-exceeds-pause-retention"])
      assert.match(report.warnings[0]!.message, /NotPausedError/)
    }).pipe(Effect.provide(queue)))

  it.effect("children-without-shared-queue: no ChildQueueStore in context", () =>
    Effect.gen(function*() {
      const report = yield* Diagnostics.check()
      assert.deepStrictEqual(ids(report), ["children-without-shared-queue"])
      assert.isUndefined(report.stores, "no probe: the stores were not looked at")
    }))

  it.effect("the BatonConfig in context is the one checked", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(ids(yield* Diagnostics.check()), ["sweep-interval-exceeds-lease"])
    }).pipe(Effect.provide(Layer.merge(queue, BatonConfig.layer({ lease: "5 seconds", sweepInterval: "6 seconds" })))))
})

describe("sqlite-network-filesystem", () => {
  const dir = tempDir("diag")
  const mounts = (line: string) => {
    const file = Path.join(dir, `mounts-${Math.random()}`)
    Fs.writeFileSync(file, `sysfs /sys sysfs rw 0 0\n/dev/sda1 / ext4 rw 0 0\n${line}\n`)
    return file
  }
  const real = Fs.realpathSync(dir)

  it.effect("a file under an nfs4, cifs or fuse.sshfs mount is warned of; a local one is not", () =>
    Effect.gen(function*() {
      for (const type of ["nfs4", "cifs", "fuse.sshfs"]) {
        const probe = SqliteProbe.layer({ path: Path.join(dir, "a.db"), mounts: mounts(`server:/export ${real} ${type} rw 0 0`) })
        const report = yield* Diagnostics.check().pipe(Effect.provide(Layer.merge(probe, queue)))
        assert.deepStrictEqual(ids(report), ["sqlite-network-filesystem"], type)
        assert.deepInclude(report.stores, { _tag: "Sqlite", fileSystem: type, mountPoint: real })
      }
      const local = SqliteProbe.layer({ path: Path.join(dir, "a.db"), mounts: mounts(`tmpfs ${real} tmpfs rw 0 0`) })
      assert.deepStrictEqual(ids(yield* Diagnostics.check().pipe(Effect.provide(Layer.merge(local, queue)))), [])
    }))

  it("the longest mount point covering the folder decides, escapes read as the mount table writes them", () => {
    const table = "/dev/sda1 / ext4 rw 0 0\nsrv:/x /mnt/a\\040b nfs rw 0 0\n/dev/sdb /mnt/a\\040b/local ext4 rw 0 0\n"
    assert.deepStrictEqual(mountOf("/mnt/a b/data", table), { mountPoint: "/mnt/a b", fileSystem: "nfs" })
    assert.deepStrictEqual(mountOf("/mnt/a b/local/x", table), { mountPoint: "/mnt/a b/local", fileSystem: "ext4" })
    assert.deepStrictEqual(mountOf("/mnt/a bc", table), { mountPoint: "/", fileSystem: "ext4" })
  })

  it.effect("the machine's own mount table is read for a real file", () =>
    Effect.gen(function*() {
      const facts = yield* SqliteProbe.probe({ path: Path.join(dir, "real.db") })
      assert.isString(facts.fileSystem)
      assert.isString(facts.mountPoint)
    }))
})

describe("SqliteProbe.layer options", () => {
  it.effect("a missing path, an empty mounts or an unknown option fails the build naming the field", () =>
    Effect.gen(function*() {
      const build = (options: unknown) => Effect.flip(Layer.build(SqliteProbe.layer(options as never)).pipe(Effect.scoped))
      assert.deepInclude(yield* build({}), { _tag: "BatonConfigError", field: "path" })
      assert.deepInclude(yield* build({ path: "/tmp/x.db", mounts: "" }), { _tag: "BatonConfigError", field: "mounts" })
      assert.deepInclude(yield* build({ path: "/tmp/x.db", mount: "/proc/mounts" }), { _tag: "BatonConfigError", field: "mount" })
    }))
})
