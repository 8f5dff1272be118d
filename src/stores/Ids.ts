/**
 * Identifiers, and the service that makes new ones.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"

/**
 * A tenant: every row is keyed by it. `"default"` when the caller names none.
 *
 * @category models
 * @since 0.1.0
 */
export type TenantId = string
/**
 * A conversation thread: the LangGraph `thread_id` of its root executions.
 *
 * @category models
 * @since 0.1.0
 */
export type ThreadId = string
/**
 * One execution (a root, or a child of one).
 *
 * @category models
 * @since 0.1.0
 */
export type ExecutionId = string
/**
 * One running instance of the application (a process, a pod).
 *
 * @category models
 * @since 0.1.0
 */
export type InstanceId = string
/**
 * One pause (one LangGraph interrupt waiting for a decision).
 *
 * @category models
 * @since 0.1.0
 */
export type PauseId = string

/**
 * The longest id any store keeps: 200 characters (UTF-16 code units), never
 * a NUL, and always well-formed Unicode (no lone surrogate: SQLite and
 * Postgres keep text as UTF-8 and would store one as U+FFFD, making
 * "x\uD800y" the same id as "x\uFFFDy"). It holds for every string a store keys or indexes — tenant,
 * thread, execution, pause, owner and holder ids, tree keys — so that every
 * backend can index it (Postgres refuses NUL in text and caps an index
 * entry near 2.7 kB; 200 characters are at most 800 bytes of UTF-8). Every
 * contract checks it before any write, the same way on every backend: an
 * id over the limit, or one that is not well-formed, fails with
 * `InvalidInputError` naming it.
 *
 * @category ids
 * @since 0.1.0
 */
export const maxIdLength = 200

/**
 * The tenant used when a caller names none.
 *
 * @category utils
 * @since 0.1.0
 */
export const defaultTenant: TenantId = "default"

/**
 * Whether a string is well-formed Unicode: no lone surrogate (half of a
 * UTF-16 pair). A backend that keeps text as UTF-8 (SQLite, Postgres)
 * stores a lone surrogate as U+FFFD, so "x\uD800y" and "x\uFFFDy" would be
 * one key there and two in memory.
 *
 * @category ids
 * @since 0.1.0
 */
export const isWellFormed = (value: string): boolean => (value as string & { isWellFormed(): boolean }).isWellFormed()

/**
 * What the `Text` and `Id` schemas say of a string that is not well-formed.
 *
 * @category ids
 * @since 0.1.0
 */
export const illFormedReason =
  "must be well-formed Unicode, but holds a lone surrogate (half of a UTF-16 pair), which UTF-8 stores cannot keep apart from U+FFFD: pass whole characters (check with String.prototype.isWellFormed, or mend with toWellFormed), or encode a binary id as hex or base64url"

/**
 * A text a store keys, indexes or compares by, which may be empty (a key
 * prefix): at most {@link maxIdLength} characters, no NUL, well-formed
 * Unicode. Every store contract checks its texts with it before any write.
 *
 * @category ids
 * @since 0.1.0
 */
export const Text = Schema.String.check(
  Schema.makeFilter((s: string) => s.length <= maxIdLength || `must be at most ${maxIdLength} characters (got ${s.length})`),
  Schema.makeFilter((s: string) => !s.includes("\u0000") || "must not contain a NUL character"),
  Schema.makeFilter((s: string) => isWellFormed(s) || illFormedReason)
).annotate({ identifier: "baton/Text", expected: "a string" })

/**
 * A key or id: a non-empty {@link Text}. The schema of every id below, and
 * of every other key a store keeps (owners, holders, tree keys).
 *
 * @category ids
 * @since 0.1.0
 */
export const Id = Text.check(Schema.makeFilter((s: string) => s.length > 0 || "must be a non-empty string"))
  .annotate({ identifier: "baton/Id", expected: "a non-empty string" })

/**
 * The schema of a {@link TenantId}.
 *
 * @category ids
 * @since 0.1.0
 */
export const TenantIdSchema: Schema.Codec<TenantId> = Id.annotate({ identifier: "TenantId" })
/**
 * The schema of a {@link ThreadId}.
 *
 * @category ids
 * @since 0.1.0
 */
export const ThreadIdSchema: Schema.Codec<ThreadId> = Id.annotate({ identifier: "ThreadId" })
/**
 * The schema of an {@link ExecutionId} (a root's too).
 *
 * @category ids
 * @since 0.1.0
 */
export const ExecutionIdSchema: Schema.Codec<ExecutionId> = Id.annotate({ identifier: "ExecutionId" })
/**
 * The schema of an {@link InstanceId}.
 *
 * @category ids
 * @since 0.1.0
 */
export const InstanceIdSchema: Schema.Codec<InstanceId> = Id.annotate({ identifier: "InstanceId" })
/**
 * The schema of a {@link PauseId}.
 *
 * @category ids
 * @since 0.1.0
 */
export const PauseIdSchema: Schema.Codec<PauseId> = Id.annotate({ identifier: "PauseId" })

/**
 * Makes new unique ids; swapped in tests for a deterministic sequence.
 *
 * @category services
 * @since 0.1.0
 */
export class IdGenerator extends Context.Service<IdGenerator, {
  /** A new id, unique across instances, starting with `prefix`. */
  readonly make: (prefix: string) => Effect.Effect<string>
}>()("baton/IdGenerator") {}

/**
 * Random UUIDs (`prefix_` + uuid v4).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.succeed(IdGenerator, {
  make: (prefix) => Effect.sync(() => `${prefix}_${crypto.randomUUID()}`)
})

/**
 * `prefix_1`, `prefix_2`, … per generator: reproducible ids for tests and simulations.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSequential = Layer.sync(IdGenerator, () => {
  let next = 0
  return { make: (prefix) => Effect.sync(() => `${prefix}_${String(++next).padStart(6, "0")}`) }
})
