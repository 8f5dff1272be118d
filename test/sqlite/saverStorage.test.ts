/**
 * The SQLite saver's storage: a database from before migration 4 stays
 * readable after it, the fence folded into the write still refuses a stale
 * holder, the serializer's fast path reads exactly what the serializer
 * would, and the sorted reads compile once.
 */
import { type Checkpoint, emptyCheckpoint, JsonPlusSerializer, uuid6 } from "@langchain/langgraph-checkpoint"
import { AIMessage, HumanMessage } from "@langchain/core/messages"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { classifySqliteError, isSqlError, SqlError } from "effect/sql/SqlError"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { constants, DatabaseSync } from "node:sqlite"
import { assert, describe, it } from "vitest"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import { parsesPlain } from "../../src/checkpoint/internal/serde.ts"
import { LeaseLostError } from "../../src/stores/Errors.ts"
import { type Fence, fenceKey } from "../../src/stores/Fence.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import { SyncAccess, type SyncCapable } from "../../layers/sql/internal/direct.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../../layers/sqlite/SqliteClient.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("saver-storage")
let n = 0

/** A client on a fresh file (or `path`), with a runner for effects on it. */
const client = async (path = Path.join(dir, `storage-${++n}.db`)) => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(SqliteClient.layer({ path }), scope))
  const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(effect, context))
  /** Every statement the synchronous path runs from now on (for stores made after this call). */
  const recordStatements = () => {
    const sqlite = Context.get(context, SqliteClient.SqliteClient) as unknown as SyncCapable
    const inner = sqlite[SyncAccess]
    const seen: Array<string> = []
    ;(sqlite as any)[SyncAccess] = ((f) =>
      inner((conn) =>
        f({
          execute: (text, params) => (seen.push(text), conn.execute(text, params)),
          run: (text, params) => (seen.push(text), conn.run(text, params))
        }))) satisfies SyncCapable[typeof SyncAccess]
    return seen
  }
  return { path, run, recordStatements, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The fence of a holder at time `at` (its lease confirmed by the store; what it is told it lost goes to `lost`). */
const heldFence = (lease: Lease, at: number, lost: Array<LeaseLostError> = []): Fence => ({
  lease,
  ttlMillis: 30_000,
  renewMillis: 10_000,
  now: () => at,
  refusal: () => undefined,
  confirmed: () => {},
  lost: (e) => void lost.push(e),
  renewBeforeWrite: async () => {}
})

const serde = new JsonPlusSerializer()
const bytesOf = async (value: unknown) => (await serde.dumpsTyped(value))[1]

describe("the SQLite saver's storage", () => {
  it("a database at schema version 2 with checkpoints, blobs and writes stays readable after migrating, and takes new checkpoints", async () => {
    const db = await client()
    // Version 2 and its rows, written as the saver before migration 4 wrote them (no channel_versions column).
    await db.run(SqlMigrations.migrate({ upTo: 2 }))
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: {},
      channel_versions: { messages: 1, step: 1 }
    }
    const messages = [new HumanMessage({ content: "hello", id: "h1" }), new AIMessage({ content: "hi", id: "a1" })]
    const [checkpointBytes, metadataBytes, messagesBytes, stepBytes, writeBytes] = await Promise.all([
      bytesOf(checkpoint),
      bytesOf({ source: "loop", step: 1, parents: {} }),
      bytesOf(messages),
      bytesOf(1),
      bytesOf("pending")
    ])
    await db.run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO baton_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata)
        VALUES ('default', 'old', '', ${checkpoint.id}, NULL, 'json', ${checkpointBytes}, 'json', ${metadataBytes})`
      yield* sql`INSERT INTO baton_checkpoint_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type, value)
        VALUES ('default', 'old', '', 'messages', '1', 'json', ${messagesBytes}), ('default', 'old', '', 'step', '1', 'json', ${stepBytes})`
      yield* sql`INSERT INTO baton_checkpoint_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path)
        VALUES ('default', 'old', '', ${checkpoint.id}, 'task-1', 0, 'plan', 'json', ${writeBytes}, '')`
    }))
    const applied = await db.run(SqlMigrations.migrate())
    assert.deepStrictEqual(applied.map(([id]) => id), SqlMigrations.migrations.filter(([id]) => id > 2).map(([id]) => id))
    const saver = new BatonCheckpointSaver(await db.run(SqlCheckpointStore.makeRows()))

    const read = await saver.getTuple({ configurable: { thread_id: "old" } })
    assert.strictEqual(read?.checkpoint.id, checkpoint.id)
    assert.strictEqual(read!.checkpoint.channel_values.step, 1)
    const values = read!.checkpoint.channel_values.messages as Array<AIMessage>
    assert.deepStrictEqual(values.map((m) => [m.constructor.name, m.content]), [["HumanMessage", "hello"], ["AIMessage", "hi"]])
    assert.deepStrictEqual(read!.pendingWrites, [["task-1", "plan", "pending"]])
    const byId = await saver.getTuple({ configurable: { thread_id: "old", checkpoint_id: checkpoint.id } })
    assert.deepStrictEqual(byId?.checkpoint.channel_values, read!.checkpoint.channel_values)

    // A new checkpoint on top, changing one channel: the unchanged one is still read from the old blob.
    const next: Checkpoint = { ...checkpoint, id: uuid6(-1), channel_values: { messages, step: 2 }, channel_versions: { messages: 1, step: 2 } }
    await saver.put({ configurable: { thread_id: "old", checkpoint_ns: "", checkpoint_id: checkpoint.id } }, next, { source: "loop", step: 2, parents: {} }, { step: 2 })
    const latest = await saver.getTuple({ configurable: { thread_id: "old" } })
    assert.strictEqual(latest?.checkpoint.id, next.id)
    assert.strictEqual(latest!.checkpoint.channel_values.step, 2)
    assert.strictEqual((latest!.checkpoint.channel_values.messages as Array<unknown>).length, 2)
    const listed: Array<string> = []
    for await (const t of saver.list({ configurable: { thread_id: "old" } })) listed.push(t.checkpoint.id)
    assert.deepStrictEqual(listed, [next.id, checkpoint.id])
    await db.close()
  })

  it("after a write the store folded the fence into, a holder whose lease passed to another is refused and writes nothing", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const { leases, rows } = await db.run(Effect.gen(function*() {
      return { leases: yield* SqlLeaseStore.make(), rows: yield* SqlCheckpointStore.makeRows() }
    }))
    const saver = new BatonCheckpointSaver(rows)
    const now = 1_000_000
    const acquired = await Effect.runPromise(leases.acquire("default", "root", "holder-a", 30_000, now))
    const lease: Lease = Option.getOrThrow(acquired)
    const lost: Array<LeaseLostError> = []
    const confirmed: Array<readonly [number, number, boolean]> = []
    let at = now
    const fence: Fence = {
      lease,
      ttlMillis: 30_000,
      renewMillis: 10_000,
      now: () => at,
      refusal: () => undefined,
      confirmed: (readAt, expiresAt, renewed) => void confirmed.push([readAt, expiresAt, renewed]),
      lost: (e) => void lost.push(e),
      renewBeforeWrite: async () => {}
    }
    const base = { thread_id: "t", checkpoint_ns: "", [fenceKey]: fence }
    const put = (step: number, parent?: string) => {
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step }, channel_versions: { step } }
      return saver.put({ configurable: { ...base, checkpoint_id: parent } }, checkpoint, { source: "loop", step, parents: {} }, { step })
    }
    // The first write checks the lease in full; the next ones (no renewal due) take the folded statements.
    const first = await put(1)
    at += 1_000
    const second = await put(2, first.configurable?.checkpoint_id)
    await saver.putWrites({ configurable: { ...base, checkpoint_id: second.configurable?.checkpoint_id } }, [["a", 1], ["b", 2]], "task")
    assert.deepStrictEqual(confirmed, [[now, now + 30_000, false], [now + 1_000, now + 30_000, false], [now + 1_000, now + 30_000, false]])

    // The lease expires and another holder takes it; holder-a (whose store remembers its lease) writes again.
    at = now + 31_000
    const taken = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "root", "holder-b", 30_000, at)))
    assert.strictEqual(taken.epoch, lease.epoch + 1)
    at = now + 5_000 // the stale holder's clock: by its own reckoning the lease is live and no renewal is due
    const refused = await put(3, second.configurable?.checkpoint_id).then(() => undefined, (e) => e)
    assert.instanceOf(refused, LeaseLostError)
    const refusedWrites = await saver.putWrites({ configurable: { ...base, checkpoint_id: second.configurable?.checkpoint_id } }, [["c", 3]], "task-2")
      .then(() => undefined, (e) => e)
    assert.instanceOf(refusedWrites, LeaseLostError)
    assert.strictEqual(lost.length, 2)
    const latest = await saver.getTuple({ configurable: { thread_id: "t" } })
    assert.strictEqual(latest?.checkpoint.id, second.configurable?.checkpoint_id)
    assert.deepStrictEqual(latest!.pendingWrites, [["task", "a", 1], ["task", "b", 2]])
    const stored = Option.getOrThrow(await Effect.runPromise(leases.get("default", "root")))
    assert.deepStrictEqual([stored.holder, stored.epoch, stored.expiresAt], ["holder-b", taken.epoch, now + 61_000])
    await db.close()
  })

  it("a folded write (one self-committing statement) checks the file's identity too: nothing goes to a deleted file", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const seen = db.recordStatements()
    const { leases, rows } = await db.run(Effect.gen(function*() {
      return { leases: yield* SqlLeaseStore.make(), rows: yield* SqlCheckpointStore.makeRows() }
    }))
    const saver = new BatonCheckpointSaver(rows)
    const now = 3_000_000
    const lease = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "root", "holder-a", 30_000, now)))
    const fence = heldFence(lease, now + 1_000)
    const base = { thread_id: "t", checkpoint_ns: "", [fenceKey]: fence }
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step: 1 }, channel_versions: { step: 1 } }
    await saver.put({ configurable: base }, checkpoint, { source: "loop", step: 1, parents: {} }, { step: 1 })
    const config = { configurable: { ...base, checkpoint_id: checkpoint.id } }
    let mark = seen.length
    await saver.putWrites(config, [["a", 1]], "task-1")
    assert.deepStrictEqual(seen.slice(mark).map((text) => text.split(" ")[0]), ["INSERT"], "the folded path: one statement, no transaction")

    for (const suffix of ["", "-wal", "-shm"]) Fs.rmSync(db.path + suffix, { force: true })
    mark = seen.length
    const refused = await saver.putWrites(config, [["b", 2]], "task-2").then(() => undefined, (e) => e)
    assert.strictEqual(refused?._tag, "StoreError", "the write to the deleted file is refused")
    assert.strictEqual(refused?.kind, "Config")
    assert.match(refused?.message, /deleted or replaced/)
    assert.isFalse(Fs.existsSync(db.path), "nothing re-created the file")
    await db.close()
  })

  it("concurrent writes share one commit, each fenced inside it: a stale holder's write is refused alone", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const leases = await db.run(SqlLeaseStore.make())
    const seen = db.recordStatements()
    const saver = new BatonCheckpointSaver(await db.run(SqlCheckpointStore.makeRows()))
    const now = 2_000_000
    const current = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "r1", "holder-a", 30_000, now)))
    const old = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "r2", "holder-x", 30_000, now)))
    await Effect.runPromise(leases.acquire("default", "r2", "holder-y", 30_000, now + 31_000))
    const lostA: Array<LeaseLostError> = []
    const lostX: Array<LeaseLostError> = []
    const a = { thread_id: "t1", checkpoint_ns: "", [fenceKey]: heldFence(current, now + 1_000, lostA) }
    const x = { thread_id: "t2", checkpoint_ns: "", [fenceKey]: heldFence(old, now + 5_000, lostX) }
    const checkpoint = (step: number): Checkpoint => ({ ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step }, channel_versions: { step } })
    const first = checkpoint(1)
    const mark = seen.length
    const outcomes = await Promise.allSettled([
      saver.put({ configurable: a }, first, { source: "loop", step: 1, parents: {} }, { step: 1 }),
      saver.putWrites({ configurable: { ...a, checkpoint_id: first.id } }, [["step", 2]], "task-a"),
      saver.put({ configurable: x }, checkpoint(1), { source: "loop", step: 1, parents: {} }, { step: 1 }),
      saver.putWrites({ configurable: { ...x, checkpoint_id: first.id } }, [["step", 2]], "task-x")
    ])
    assert.deepStrictEqual(outcomes.map((o) => o.status), ["fulfilled", "fulfilled", "rejected", "rejected"])
    assert.instanceOf((outcomes[2] as PromiseRejectedResult).reason, LeaseLostError)
    assert.instanceOf((outcomes[3] as PromiseRejectedResult).reason, LeaseLostError)
    assert.deepStrictEqual([lostA.length, lostX.length], [0, 2])
    const batch = seen.slice(mark)
    assert.deepStrictEqual(
      batch.filter((text) => /^(BEGIN|COMMIT|ROLLBACK$)/.test(text)),
      ["BEGIN IMMEDIATE", "ROLLBACK", "BEGIN IMMEDIATE", "COMMIT"],
      "one committed transaction for the four writes (tried without savepoints first, rolled back at the refused write)"
    )
    assert.strictEqual(batch.filter((text) => text.startsWith("ROLLBACK TO")).length, 2)
    const t1 = await saver.getTuple({ configurable: { thread_id: "t1" } })
    assert.strictEqual(t1?.checkpoint.id, first.id)
    assert.deepStrictEqual(t1!.pendingWrites, [["task-a", "step", 2]])
    assert.strictEqual(await saver.getTuple({ configurable: { thread_id: "t2" } }), undefined)
    // Writes of which none is refused share a commit with no savepoint at all.
    const fine = seen.length
    const second = checkpoint(2)
    await Promise.all([
      saver.put({ configurable: { ...a, checkpoint_id: first.id } }, second, { source: "loop", step: 2, parents: {} }, { step: 2 }),
      saver.putWrites({ configurable: { ...a, checkpoint_id: second.id } }, [["step", 3]], "task-c")
    ])
    const together = seen.slice(fine)
    assert.deepStrictEqual(together.filter((text) => /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(text)), ["BEGIN IMMEDIATE", "COMMIT"], "one transaction, no savepoint")
    assert.deepStrictEqual((await saver.getTuple({ configurable: { thread_id: "t1" } }))!.pendingWrites, [["task-c", "step", 3]])
    // A lone write still runs on its own (no savepoint).
    const before = seen.length
    await saver.putWrites({ configurable: { ...a, checkpoint_id: first.id } }, [["step", 3]], "task-b")
    assert.isFalse(seen.slice(before).some((text) => text.startsWith("SAVEPOINT")))
    await db.close()
  })

  it("a put's blobs go in under their own (tenant, thread, ns), also when the put is one statement", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const rows = await db.run(SqlCheckpointStore.makeRows())
    const row = { tenantId: "t", threadId: "t1", checkpointNs: "", checkpointId: "c1", parentCheckpointId: null, type: "json", checkpoint: new Uint8Array([1]), metadataType: "json", metadata: new Uint8Array([2]) }
    const blob = (threadId: string, checkpointNs: string) => ({ tenantId: "t", threadId, checkpointNs, channel: "a", version: "1", type: "json", value: new Uint8Array([3]) })
    await rows.putCheckpoint(row, [blob("t1", ""), blob("t2", "sub")], undefined)
    assert.strictEqual((await rows.getBlobs("t", "t1", "", [{ channel: "a", version: "1" }])).length, 1)
    assert.strictEqual((await rows.getBlobs("t", "t2", "sub", [{ channel: "a", version: "1" }])).length, 1, "the other thread's blob is filed under it")
    await db.close()
  })

  it("over a client whose errors keep the driver's text only in their cause (as effect's own SQLite clients do), a put whose lease moved still lands by the full check", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const leases = await db.run(SqlLeaseStore.make())
    const lease = Option.getOrThrow(await Effect.runPromise(leases.acquire("t", "r1", "h", 30_000, 1_000)))
    assert.isTrue(await Effect.runPromise(leases.renew(lease, 30_000, 5_000)))
    // No synchronous access (the effect path), and each SqlError reshaped: a generic message, the driver's error as its reason's cause.
    const reshaped = (e: unknown) =>
      isSqlError(e) ? new SqlError({ reason: classifySqliteError((e.reason as any).cause, { message: "Failed to execute statement", operation: "execute" }) }) : e
    const connection = (conn: any) =>
      new Proxy(conn, {
        get: (target, key) => {
          const value = Reflect.get(target, key)
          if (typeof value !== "function") return value
          return key === "execute" || key === "executeRaw" ? (...args: Array<any>) => Effect.mapError(value.apply(target, args), reshaped) : value.bind(target)
        }
      })
    const foreign = (sql: any) =>
      new Proxy(sql, { get: (target, key) => key === SyncAccess ? undefined : key === "reserve" ? Effect.map(target.reserve, connection) : Reflect.get(target, key) })
    const rows = await db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.provideService(SqlCheckpointStore.makeRows(), SqlClient.SqlClient, foreign(sql))))
    const row = { tenantId: "t", threadId: "r1", checkpointNs: "", checkpointId: "c1", parentCheckpointId: null, type: "json", checkpoint: new Uint8Array([1]), metadataType: "json", metadata: new Uint8Array([2]) }
    const blob = { tenantId: "t", threadId: "r1", checkpointNs: "", channel: "a", version: "1", type: "json", value: new Uint8Array([3]) }
    // The first write tries the expiry the lease was taken with (31 s); the row holds 35 s: refused, then the full check.
    const written = await rows.putCheckpoint(row, [blob], { lease, ttlMillis: 30_000, renewMillis: 10_000, now: 6_000 })
    assert.deepStrictEqual(written, { expiresAt: 35_000, renewed: false })
    assert.strictEqual((await rows.getCheckpoint("t", "r1", "", "c1"))?.checkpointId, "c1")
    await db.close()
  })

  it("a prune batch never joins a step's writes: a write queued in the same turn commits and is answered first, in its own transaction", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const leases = await db.run(SqlLeaseStore.make())
    const seen = db.recordStatements()
    const rows = await db.run(SqlCheckpointStore.makeRows())
    const saver = new BatonCheckpointSaver(rows)
    const now = 2_000_000
    const lease = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "r1", "holder-a", 30_000, now)))
    const fence = heldFence(lease, now + 1_000)
    const configurable = { thread_id: "t1", checkpoint_ns: "", [fenceKey]: fence }
    const checkpoint = (step: number): Checkpoint => ({ ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step }, channel_versions: { step } })
    let parent: string | undefined
    for (let step = 1; step <= 5; step++) {
      const c = checkpoint(step)
      await saver.put({ configurable: { ...configurable, checkpoint_id: parent } }, c, { source: "loop", step, parents: {} }, { step })
      parent = c.id
    }
    const mark = seen.length
    const order: Array<string> = []
    // The prune is queued first, the step's write after it, in the same turn of the event loop.
    const pruned = rows.pruneThread!("default", "t1", { keepLast: 1 }, 100).then((p) => (order.push("prune"), p))
    const written = saver.put({ configurable: { ...configurable, checkpoint_id: parent } }, checkpoint(6), { source: "loop", step: 6, parents: {} }, { step: 6 })
      .then(() => order.push("write"))
    await Promise.all([pruned, written])
    assert.deepStrictEqual(order, ["write", "prune"], "the step's write is answered before the prune runs")
    assert.deepStrictEqual(
      seen.slice(mark).filter((text) => /^(BEGIN|COMMIT|INSERT INTO "baton_checkpoint_puts")/.test(text)).map((text) => text.split(" (")[0]),
      ["INSERT INTO \"baton_checkpoint_puts\"", "BEGIN IMMEDIATE", "COMMIT"],
      "the write's one statement (it commits alone), then the prune's transaction"
    )
    assert.strictEqual((await pruned).checkpoints, 5)
    await db.close()
  })

  it("the serializer's fast path reads exactly what the serializer would: a channel named lc, a __proto__ key, lc records, escapes", async () => {
    const db = await client()
    await db.run(SqlMigrations.migrate())
    const saver = new BatonCheckpointSaver(await db.run(SqlCheckpointStore.makeRows()))
    const values: Record<string, unknown> = {
      lc: { lc: 1, plain: true },
      proto: JSON.parse("{\"__proto__\": {\"polluted\": 1}, \"own\": 2}"),
      escaped: JSON.parse("{\"l\\u0063\": 2, \"type\": \"undefined\"}"),
      undef: { a: undefined, b: [1, undefined] },
      set: new Set([1, 2]),
      message: new AIMessage({ content: "hi", id: "m" }),
      plain: { nested: [{ a: 1 }, "text with \"quotes\" and é"], n: 1.5 },
      text: "\"lc\" inside a string"
    }
    const channels = Object.keys(values)
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: values,
      channel_versions: Object.fromEntries(channels.map((c) => [c, 1]))
    }
    await saver.put({ configurable: { thread_id: "serde", checkpoint_ns: "" } }, checkpoint, { source: "input", step: -1, parents: {} }, checkpoint.channel_versions)
    await saver.putWrites({ configurable: { thread_id: "serde", checkpoint_ns: "", checkpoint_id: checkpoint.id } }, [["lc", values.proto], ["x", values.escaped]], "task")
    const read = await saver.getTuple({ configurable: { thread_id: "serde" } })
    for (const channel of channels) {
      const expected = await serde.loadsTyped(...(await serde.dumpsTyped(values[channel])))
      assert.deepStrictEqual(read!.checkpoint.channel_values[channel], expected, channel)
      const got = read!.checkpoint.channel_values[channel]
      // (A `__proto__` key: the serializer's reviver makes it the prototype; so must the fast path.)
      const isObject = (x: unknown): x is object => typeof x === "object" && x !== null
      assert.strictEqual(isObject(got), isObject(expected), channel)
      if (isObject(got) && isObject(expected)) {
        assert.deepStrictEqual(Object.getPrototypeOf(got), Object.getPrototypeOf(expected), channel)
        assert.deepStrictEqual(Object.keys(got), Object.keys(expected), channel)
      }
    }
    assert.deepStrictEqual(read!.pendingWrites, [
      ["task", "lc", await serde.loadsTyped(...(await serde.dumpsTyped(values.proto)))],
      ["task", "x", await serde.loadsTyped(...(await serde.dumpsTyped(values.escaped)))]
    ])
    assert.isTrue(parsesPlain("{\"a\":[1,2],\"b\":\"x\"}"))
    assert.isFalse(parsesPlain("{\"lc\":1}"))
    assert.isFalse(parsesPlain("{\"__proto__\":{}}"))
    assert.isFalse(parsesPlain("{\"l\\u0063\":1}"))
    await db.close()
  })

  it("the sorted reads (the newest checkpoint, list) compile once: later calls run the cached statement, not a fresh compile", async () => {
    // The connection the client opens, caught at its first prepare, to watch compiles with an authorizer
    // (SQLite asks it at every compile, a re-compile of an expired statement included).
    const prepare = DatabaseSync.prototype.prepare
    let connection: DatabaseSync | undefined
    DatabaseSync.prototype.prepare = function(this: DatabaseSync, ...args: Parameters<typeof prepare>) {
      connection ??= this
      return prepare.apply(this, args)
    }
    const db = await client()
    try {
      await db.run(SqlMigrations.migrate())
    } finally {
      DatabaseSync.prototype.prepare = prepare
    }
    const saver = new BatonCheckpointSaver(await db.run(SqlCheckpointStore.makeRows()))
    const config = { configurable: { thread_id: "sorted", checkpoint_ns: "" } }
    const ids: Array<string> = []
    for (let step = 0; step < 3; step++) {
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step }, channel_versions: { step: step + 1 } }
      await saver.put(config, checkpoint, { source: "loop", step, parents: {} }, { step: step + 1 })
      ids.push(checkpoint.id)
    }
    const reads = async () => {
      const tuple = await saver.getTuple({ configurable: { thread_id: "sorted" } })
      const listed: Array<string> = []
      for await (const t of saver.list({ configurable: { thread_id: "sorted" } })) listed.push(t.checkpoint.id)
      return { newest: tuple?.checkpoint.id, step: tuple?.checkpoint.channel_values.step, listed }
    }
    const compiles: Array<string> = []
    assert.isDefined(connection)
    connection!.setAuthorizer((action, a, b) => {
      compiles.push(`${action} ${a} ${b}`)
      return constants.SQLITE_OK
    })
    // Setting an authorizer expires every statement: the first reads compile once more.
    assert.deepStrictEqual(await reads(), { newest: ids[2], step: 2, listed: [...ids].reverse() })
    assert.isAbove(compiles.length, 0, "the authorizer sees compiles")
    compiles.length = 0
    for (let i = 0; i < 3; i++) assert.deepStrictEqual(await reads(), { newest: ids[2], step: 2, listed: [...ids].reverse() })
    assert.deepStrictEqual(compiles, [], "no statement was compiled again")
    connection!.setAuthorizer(null)
    await db.close()
  })
})
