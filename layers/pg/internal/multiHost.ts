/**
 * Multi-host connection URLs, as libpq reads them:
 * `postgres://user@h1:5440,h2:5441/db?target_session_attrs=read-write`.
 * `@effect/sql-pg` connects to one host; this gives its connections a
 * `stream` that picks the host each time a connection is opened: the hosts
 * in order (the one that served last first), the first that accepts a
 * connection and — for `read-write` / `primary` — is not read-only / not in
 * recovery, asked on a short connection of its own. So after a failover
 * (the old primary gone, a standby promoted) every new connection of the
 * pool reaches the new primary, and none is opened to a standby. No host
 * fitting is a connection failure (the stores' `StoreError` of kind
 * `Connection`, retryable).
 *
 * @since 0.1.0
 */
import { PgConnection } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Net from "node:net"
import { Duplex } from "node:stream"

/**
 * What a session must be: libpq's `target_session_attrs` values baton follows.
 *
 * @category models
 * @since 0.1.0
 */
export type SessionAttrs = "any" | "read-write" | "primary"

/**
 * A multi-host URL taken apart.
 *
 * @category models
 * @since 0.1.0
 */
export interface MultiHost {
  readonly hosts: ReadonlyArray<{ readonly host: string; readonly port: number }>
  readonly attrs: SessionAttrs
  /** The same URL with only the first host, for the driver to read the rest (user, database, parameters). */
  readonly singleUrl: string
}

const multi = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*,[^/?#]*)(.*)$/

/**
 * The hosts of `url` when it names more than one (`undefined` otherwise), or
 * the reason it cannot be read.
 *
 * @category utils
 * @since 0.1.0
 */
export const parse = (url: string): MultiHost | string | undefined => {
  const match = multi.exec(url)
  if (match === null) {
    const attrs = safeParams(url)?.get("target_session_attrs")
    return attrs === undefined || attrs === null || ["any", "read-write", "primary"].includes(attrs)
      ? undefined
      : `has target_session_attrs=${attrs}: baton follows any, read-write and primary`
  }
  const [, scheme, auth = "", list, rest] = match as unknown as [string, string, string | undefined, string, string]
  const hosts: Array<{ host: string; port: number }> = []
  for (const part of list.split(",")) {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(part)
    if (m === null) return `names the host "${part}": each host of a list is host or host:port`
    const port = m[2] === undefined ? 5432 : Number(m[2])
    if (!(port >= 1 && port <= 65535)) return `names port ${m[2]}: it must be 1 to 65535`
    hosts.push({ host: m[1]!.replace(/^\[|\]$/g, ""), port })
  }
  const params = safeParams(`${scheme}x${rest}`)
  const attrs = params?.get("target_session_attrs") ?? "any"
  if (!["any", "read-write", "primary"].includes(attrs)) return `has target_session_attrs=${attrs}: baton follows any, read-write and primary`
  return { hosts, attrs: attrs as SessionAttrs, singleUrl: `${scheme}${auth}${list.split(",")[0]}${rest}` }
}

const safeParams = (url: string) => {
  try {
    return new URL(url).searchParams
  } catch {
    return undefined
  }
}

/** Whether `host` takes sessions of `attrs`, asked on a connection of its own (closed at once). */
const fits = (config: PgConnection.Config, host: { readonly host: string; readonly port: number }, attrs: SessionAttrs) =>
  Effect.scoped(Effect.gen(function*() {
    const connection = yield* PgConnection.make({ ...config, stream: undefined, host: host.host, port: host.port, prepare: false })
    if (attrs === "any") return true
    const [row] = (yield* connection.query("SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only", [], false)).rows
    return attrs === "primary" ? row?.recovery === false : row?.read_only === "off"
  })).pipe(Effect.orElseSucceed(() => false))

/**
 * The `stream` of a driver config (`config`: the single-host one, for the
 * credentials and settings) that connects each new connection to the first
 * host of `target` fitting its session attributes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const streamOf = (target: MultiHost, config: PgConnection.Config): () => Duplex => {
  let last = 0
  const pick = async (): Promise<{ readonly host: string; readonly port: number }> => {
    const order = [...target.hosts.keys()].map((i) => (i + last) % target.hosts.length)
    for (const i of order) {
      if (await Effect.runPromise(fits(config, target.hosts[i]!, target.attrs))) {
        last = i
        return target.hosts[i]!
      }
    }
    throw Object.assign(
      new Error(`no host of ${target.hosts.map((h) => `${h.host}:${h.port}`).join(",")} takes ${target.attrs} sessions now (target_session_attrs)`),
      { code: "ECONNREFUSED" }
    )
  }
  return () => routed(pick)
}

/** A stream that connects to the host `pick` answers, holding what is written until it is connected. */
const routed = (pick: () => Promise<{ readonly host: string; readonly port: number }>): Duplex => {
  let socket: Net.Socket | undefined
  const pending: Array<readonly [Buffer, (error?: Error | null) => void]> = []
  const proxy = new Duplex({
    read() {
      socket?.resume()
    },
    write(chunk: Buffer, _encoding, callback) {
      if (socket !== undefined) socket.write(chunk, callback)
      else pending.push([chunk, callback])
    },
    final(callback) {
      if (socket !== undefined) socket.end(callback)
      else callback()
    },
    destroy(error, callback) {
      socket?.destroy()
      callback(error)
    }
  })
  pick().then((host) => {
    if (proxy.destroyed) return
    const s = Net.connect({ host: host.host, port: host.port, noDelay: true })
    s.once("connect", () => {
      socket = s
      for (const [chunk, callback] of pending.splice(0)) s.write(chunk, callback)
    })
    s.on("data", (data: Buffer) => {
      if (!proxy.push(data)) s.pause()
    })
    s.on("end", () => proxy.push(null))
    s.on("error", (error) => proxy.destroy(error))
    s.on("close", () => proxy.destroy())
  }, (error: Error) => proxy.destroy(error))
  return proxy
}

/** The URL for messages: the hosts, the database, no password. */
export const where = (target: MultiHost): string => {
  let database = ""
  try {
    database = decodeURIComponent(new URL(target.singleUrl).pathname.replace(/^\//, ""))
  } catch {}
  return `${target.hosts.map((h) => `${h.host}:${h.port}`).join(",")}/${database === "" ? "(default database)" : database}`
}

/** The URL as the driver gets it. */
export const redactedSingle = (target: MultiHost) => Redacted.make(target.singleUrl)
