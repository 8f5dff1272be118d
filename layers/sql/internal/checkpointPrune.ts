/**
 * Retention over the SQL checkpoint tables: the threads that hold
 * checkpoints, page by page, and the prune of one thread in one transaction
 * (see `CheckpointRows.pruneThread`): its checkpoints the rule no longer
 * keeps (never the newest of a namespace), their writes, and the blobs no
 * remaining checkpoint of the namespace names. On SQLite the transaction is
 * `BEGIN IMMEDIATE`: a writer of any thread waits for it, so a prune is kept
 * to a bounded number of rows: at most `limit` checkpoints (with their
 * writes) and at most `limit` blobs.
 */
import type { SqlClient } from "effect/sql"
import type { Fragment, Identifier, Statement } from "effect/sql/Statement"
import type { PruneRule, Pruned, ThreadKey } from "../../../src/stores/CheckpointRows.ts"
import { Begin, changes, Commit, type Op } from "./direct.ts"

/** Ids bound per `IN (…)` list (well under both dialects' parameter caps). */
const idChunk = 400

/** What the prune statements are built from. */
export interface PruneTables {
  readonly sql: SqlClient.SqlClient
  readonly isPg: boolean
  readonly checkpoints: Identifier
  readonly writes: Identifier
  readonly blobs: Identifier
  readonly limitOf: (limit: number) => Fragment
}

const chunked = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** The prune operations over the tables. */
export const make = (t: PruneTables) => {
  const { sql } = t

  /** Runs a DELETE for the number of rows it removed. */
  function* deleted(build: (tail: Fragment) => Statement<any>): Op<number> {
    if (t.isPg) return (yield build(sql.literal(" RETURNING 1"))).length
    const [text, params] = build(sql.literal("")).compile()
    const [{ changes: n }] = yield changes(text, params)
    return Number(n)
  }

  function* listThreads(after: ThreadKey | undefined, limit: number): Op<ReadonlyArray<ThreadKey>> {
    return t.isPg ? yield* distinctThreads(after, limit) : yield* seekThreads(after, limit)
  }

  /**
   * SQLite: one index seek per thread (the next pair after the last), so a
   * page reads about `limit` index entries, not every checkpoint of its threads:
   * `SELECT DISTINCT` over a table of long threads reads them all, in one
   * synchronous statement that stalls the event loop.
   */
  function* seekThreads(after: ThreadKey | undefined, limit: number): Op<ReadonlyArray<ThreadKey>> {
    const out: Array<ThreadKey> = []
    let last = after
    while (out.length < Math.max(0, Math.floor(limit))) {
      const rows: ReadonlyArray<any> = last === undefined
        ? yield sql`SELECT tenant_id, thread_id FROM ${t.checkpoints} ORDER BY tenant_id, thread_id LIMIT 1`
        // `>=` the id with U+0001 appended is the next thread (no id holds a NUL): a seek. SQLite runs `>` on the
        // prefix as a seek to the last thread and a walk over its checkpoints.
        : yield sql`SELECT tenant_id, thread_id FROM ${t.checkpoints} WHERE (tenant_id, thread_id) >= (${last.tenantId}, ${last.threadId + "\u0001"})
          ORDER BY tenant_id, thread_id LIMIT 1`
      if (rows.length === 0) break
      last = { tenantId: rows[0].tenant_id, threadId: rows[0].thread_id }
      out.push(last)
    }
    return out
  }

  function* distinctThreads(after: ThreadKey | undefined, limit: number): Op<ReadonlyArray<ThreadKey>> {
    const from = after === undefined
      ? sql.literal("")
      : sql` WHERE (tenant_id > ${after.tenantId} OR (tenant_id = ${after.tenantId} AND thread_id > ${after.threadId}))`
    const rows = yield sql`SELECT DISTINCT tenant_id, thread_id FROM ${t.checkpoints}${from}
      ORDER BY tenant_id, thread_id LIMIT ${t.limitOf(Math.max(0, Math.floor(limit)))}`
    return rows.map((r): ThreadKey => ({ tenantId: r.tenant_id, threadId: r.thread_id }))
  }

  /** The ids of one namespace the rule deletes, at most `room + 1` of them (one more tells there are more). */
  function* doomed(group: Fragment, rule: PruneRule, room: number): Op<Array<string>> {
    const ids = new Set<string>()
    const take = t.limitOf(room + 1)
    if (rule.keepLast !== undefined) {
      const keep = t.limitOf(Math.max(1, rule.keepLast))
      const rows = yield sql`SELECT checkpoint_id FROM ${t.checkpoints} WHERE ${group}
        ORDER BY checkpoint_id DESC LIMIT ${take} OFFSET ${keep}`
      for (const r of rows) ids.add(r.checkpoint_id)
    }
    if (rule.createdBefore !== undefined && ids.size <= room) {
      const rows = yield sql`SELECT checkpoint_id FROM ${t.checkpoints} WHERE ${group} AND created_at < ${rule.createdBefore}
        AND checkpoint_id < (SELECT MAX(checkpoint_id) FROM ${t.checkpoints} WHERE ${group})
        ORDER BY checkpoint_id LIMIT ${take}`
      for (const r of rows) ids.add(r.checkpoint_id)
    }
    return [...ids].sort()
  }

  /**
   * The blobs of one namespace that none of `named` (`channel\0version`)
   * is, at most `room + 1` of them: when the names are few (what keepLast
   * leaves), the store skips them itself and reads no more than it answers;
   * else every blob of the namespace is read and filtered here.
   */
  function* unnamedBlobs(group: Fragment, named: ReadonlySet<string>, room: number): Op<Array<{ readonly channel: string; readonly version: string }>> {
    const byChannel = new Map<string, Array<string>>()
    for (const key of named) {
      const [channel, version] = key.split("\u0000") as [string, string]
      byChannel.set(channel, [...(byChannel.get(channel) ?? []), version])
    }
    if (named.size > 0 && named.size <= idChunk) {
      const kept = sql.or([...byChannel].map(([channel, versions]) => sql`(channel = ${channel} AND version IN ${sql.in(versions)})`))
      return [...yield sql`SELECT channel, version FROM ${t.blobs} WHERE ${group} AND NOT ${kept} LIMIT ${t.limitOf(room + 1)}`]
    }
    return (yield sql`SELECT channel, version FROM ${t.blobs} WHERE ${group}`).filter((b) => !named.has(`${b.channel}\u0000${b.version}`))
  }

  /**
   * Deletes up to `room` blobs of one namespace that none of its remaining
   * checkpoints names (none when one lists no versions); `more` when it left
   * some for the next batch.
   */
  function* collectBlobs(group: Fragment, room: number): Op<{ readonly blobs: number; readonly more: boolean }> {
    const named = new Set<string>()
    for (const r of yield sql`SELECT channel_versions FROM ${t.checkpoints} WHERE ${group}`) {
      if (r.channel_versions == null) return { blobs: 0, more: false }
      for (const [channel, version] of JSON.parse(r.channel_versions) as Array<[string, string]>) named.add(`${channel}\u0000${version}`)
    }
    const unnamed = yield* unnamedBlobs(group, named, room)
    // By channel, its versions in one key-range list each (an OR of pairs plans far worse).
    const byChannel = new Map<string, Array<string>>()
    for (const b of unnamed.slice(0, Math.max(0, room))) byChannel.set(b.channel, [...(byChannel.get(b.channel) ?? []), b.version])
    let n = 0
    for (const [channel, versions] of byChannel) {
      for (const part of chunked(versions, idChunk)) {
        n += yield* deleted((tail) => sql`DELETE FROM ${t.blobs} WHERE ${group} AND channel = ${channel} AND version IN ${sql.in(part)}${tail}`)
      }
    }
    return { blobs: n, more: unnamed.length > room }
  }

  function* pruneThread(tenantId: string, threadId: string, rule: PruneRule, limit: number): Op<Pruned> {
    let checkpoints = 0
    let writes = 0
    let blobs = 0
    let more = false
    yield Begin
    const namespaces = yield sql`SELECT DISTINCT checkpoint_ns FROM ${t.checkpoints} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`
    for (const { checkpoint_ns: ns } of namespaces) {
      const room = Math.max(0, limit - checkpoints)
      const blobRoom = Math.max(0, limit - blobs)
      if (room === 0 && blobRoom === 0) {
        more = true
        break
      }
      const group = sql`tenant_id = ${tenantId} AND thread_id = ${threadId} AND checkpoint_ns = ${ns}`
      const ids = yield* doomed(group, rule, room)
      if (ids.length > room) more = true
      const taken = ids.slice(0, room)
      for (const part of chunked(taken, idChunk)) {
        checkpoints += yield* deleted((tail) => sql`DELETE FROM ${t.checkpoints} WHERE ${group} AND checkpoint_id IN ${sql.in(part)}${tail}`)
        writes += yield* deleted((tail) => sql`DELETE FROM ${t.writes} WHERE ${group} AND checkpoint_id IN ${sql.in(part)}${tail}`)
      }
      // At the namespace's last batch (its remaining checkpoints are then few: what the rule keeps), or in a later
      // one when an earlier batch left blobs over: at most `limit` blobs a batch, so no one transaction grows with the thread.
      if (ids.length <= room && blobRoom > 0) {
        const collected = yield* collectBlobs(group, blobRoom)
        blobs += collected.blobs
        if (collected.more) more = true
      }
    }
    yield Commit
    return { checkpoints, writes, blobs, more }
  }

  return { listThreads, pruneThread }
}
