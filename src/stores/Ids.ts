/**
 * Identifiers, and the service that makes new ones.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"

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
 * Makes new unique ids; swapped in tests for a deterministic sequence.
 *
 * @category services
 * @since 0.1.0
 */
export class IdGenerator extends Context.Service<IdGenerator, {
  /** A new id, unique across instances, starting with `prefix`. */
  readonly make: (prefix: string) => Effect.Effect<string>
}>()("baton/IdGenerator") {
  /** Random UUIDs (`prefix_` + uuid v4). */
  static readonly layer = Layer.succeed(IdGenerator, {
    make: (prefix) => Effect.sync(() => `${prefix}_${crypto.randomUUID()}`)
  })

  /** `prefix_1`, `prefix_2`, … per generator: reproducible ids for tests and simulations. */
  static readonly layerSequential = Layer.sync(IdGenerator, () => {
    let next = 0
    return { make: (prefix) => Effect.sync(() => `${prefix}_${String(++next).padStart(6, "0")}`) }
  })
}
