/**
 * What a backend can tell about itself for `Diagnostics.check`: which kind
 * of stores these are and the facts about them that decide whether a
 * deployment works as intended — the file system under a SQLite file, the
 * pooler and the keepalives between baton and Postgres. Each backend offers
 * a Layer of it (`MemoryProbe.layer`, `SqliteProbe.layer`, `PgProbe.layer`);
 * the `baton` command line wires the one of its target.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "./Errors.ts"

/**
 * How the Postgres connections reach the server.
 *
 * - `"direct"` — each connection is its own server session.
 * - `"session"` — a pooler sits between, and keeps one server session per
 *   client connection while it lasts (pgbouncer's session mode).
 * - `"transaction"` — a pooler hands server sessions to other clients
 *   between transactions (pgbouncer's transaction or statement mode): no
 *   session state survives a transaction.
 *
 * @category models
 * @since 0.1.0
 */
export type PgPooling = "direct" | "session" | "transaction"

/**
 * The facts of a Postgres server as one of baton's connections sees them.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgFacts {
  readonly pooling: PgPooling
  /**
   * How long the server takes to notice a client that vanished without
   * closing its connection (a machine lost, a partition), in seconds:
   * `tcp_keepalives_idle + tcp_keepalives_interval × tcp_keepalives_count` of
   * this connection's socket. `undefined` when the server does not say (a
   * Unix socket).
   */
  readonly keepaliveSeconds: number | undefined
  /** `server_version_num`. */
  readonly serverVersion: number
}

/**
 * The facts of a SQLite file.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteFacts {
  readonly path: string
  /** The type of the file system the file lives on (`ext4`, `nfs4`, `cifs`, …), from the mount table; `undefined` when unknown. */
  readonly fileSystem: string | undefined
  /** Where that file system is mounted. */
  readonly mountPoint: string | undefined
}

/**
 * What a probe found.
 *
 * @category models
 * @since 0.1.0
 */
export type StoreFacts =
  | { readonly _tag: "Memory" }
  | ({ readonly _tag: "Sqlite" } & SqliteFacts)
  | ({ readonly _tag: "Postgres" } & PgFacts)

/**
 * Semantics every implementation keeps: `probe` looks at the backend now
 * (it may open a connection or read the mount table) and answers what it
 * found; it fails with a `StoreError` only when the backend cannot be
 * reached. It writes nothing.
 *
 * @category models
 * @since 0.1.0
 */
export interface StoreProbeShape {
  readonly probe: Effect.Effect<StoreFacts, StoreError>
}

/**
 * The probe of the stores in use; see `StoreProbeShape`.
 *
 * @category services
 * @since 0.1.0
 */
export class StoreProbe extends Context.Service<StoreProbe, StoreProbeShape>()("baton/StoreProbe") {}
