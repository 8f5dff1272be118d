/**
 * What every conformance suite shares: its options, the instances it races
 * between, fresh ids, and the assertions on typed failures.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Cause, Clock, Context, type Duration, Effect, Exit, Layer, Option, type Scope } from "effect"

/**
 * How a store author runs a suite inside a vitest file:
 *
 * ```ts
 * leaseStoreSuite({ name: "redis", layer: RedisStores.layer, second: RedisStores.layer2 })
 * ```
 *
 * The suite builds `layer` (and `second`) once for all its tests, on the
 * suite's TestClock. Rows are kept between tests — as a SQLite file or a
 * Postgres schema keeps them — so every test works under fresh tenant ids,
 * keys and instance names of its own.
 *
 * @category models
 * @since 0.1.0
 */
export interface SuiteOptions<I> {
  /** Shown in the suite's title: `LeaseStore conformance (name)`. */
  readonly name: string
  /** Provides the service under test. */
  readonly layer: Layer.Layer<I, unknown>
  /**
   * Another Layer over the SAME database, standing for a second instance (its
   * own connection). Racers alternate between `layer` and `second`; without
   * it they all use `layer`. Both are built in one memo map: a Layer value
   * they share by reference (the database state, say) is built once, so
   * share the database that way and give each its own connection Layer.
   */
  readonly second?: Layer.Layer<I, unknown> | undefined
  /** How many fibers race in the race tests (default 16, at least 2). */
  readonly racers?: number | undefined
  /** Time allowed to build (and tear down) the Layers (default vitest's hook timeout). */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The service under test as each instance sees it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Instances<S> {
  readonly first: S
  /** The second instance's service (the first's when no `second` was given). */
  readonly second: S
  /** The instance of racer `i`: alternates first, second, first, … */
  readonly at: (i: number) => S
}

/**
 * A Layer building both instances of a suite in one memo map.
 *
 * @category conformance
 * @since 0.1.0
 */
export const instancesLayer = <I, S>(
  tag: Context.Key<Instances<S>, Instances<S>>,
  options: SuiteOptions<I>,
  pick: (context: Context.Context<I>) => S
): Layer.Layer<Instances<S>, unknown> =>
  Layer.effect(
    tag,
    Effect.gen(function*() {
      const memoMap = yield* Layer.makeMemoMap
      const scope = yield* Effect.scope
      const first = pick(yield* Layer.buildWithMemoMap(options.layer, memoMap, scope))
      const second = options.second === undefined
        ? first
        : pick(yield* Layer.buildWithMemoMap(options.second, memoMap, scope))
      return { first, second, at: (i: number) => (i % 2 === 0 ? first : second) }
    })
  )

/**
 * A service key for one suite's instances.
 *
 * @category services
 * @since 0.1.0
 */
export const instancesKey = <S>(name: string) => Context.Service<Instances<S>>(`baton/testing/conformance/${name}`)

/**
 * How many racers a suite runs.
 *
 * @category conformance
 * @since 0.1.0
 */
export const racersOf = (options: { readonly racers?: number | undefined }): number => Math.max(2, options.racers ?? 16)

/**
 * Fresh ids for one suite run: a random run part (rows of an earlier run may
 * still be in the database) and a counter. Lowercase letters and digits only,
 * so every collation orders them the same way.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeIds = () => {
  const run = Array.from({ length: 8 }, () => "abcdefghijklmnopqrstuvwxyz0123456789"[Math.floor(Math.random() * 36)]).join("")
  let next = 0
  const make = (prefix: string): string => `${prefix}${run}${String(++next).padStart(5, "0")}`
  /** Whether `id` was made by this generator with `prefix`. */
  const isOurs = (prefix: string, id: string): boolean => id.startsWith(prefix + run)
  return Object.assign(make, { isOurs })
}

/**
 * The test's clock, epoch milliseconds — what the runtime passes as `now`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const now = Clock.currentTimeMillis

/**
 * Answers `track`: every tree given to it is deleted with `store.deleteRoot`
 * when the test's scope closes, however the test ends.
 *
 * @category conformance
 * @since 0.1.0
 */
export const deleteTreesAfter = (
  store: { readonly deleteRoot: (tenantId: string, root: string) => Effect.Effect<unknown, unknown> }
): Effect.Effect<(tree: { readonly tenantId: string; readonly rootExecutionId: string }) => void, never, Scope.Scope> =>
  Effect.suspend(() => {
    // Each run its own trees, keyed by (tenant, root): a tree given twice is deleted once.
    const trees = new Map<string, { readonly tenantId: string; readonly rootExecutionId: string }>()
    return Effect.as(
      Effect.addFinalizer(() => Effect.forEach([...trees.values()], (tree) => Effect.ignore(store.deleteRoot(tree.tenantId, tree.rootExecutionId)))),
      (tree) => void trees.set(JSON.stringify([tree.tenantId, tree.rootExecutionId]), tree)
    )
  })

/**
 * Calls `deletePage(limit)` until it deletes fewer than `limit` rows,
 * checking that no call deletes more, and answers how many were deleted.
 *
 * @category conformance
 * @since 0.1.0
 */
export const deleteAllInPages = (deletePage: (limit: number) => Effect.Effect<number, unknown>, limit: number) =>
  Effect.gen(function*() {
    let total = 0
    while (true) {
      const n = yield* deletePage(limit)
      assert.isAtMost(n, limit, "a page deletes at most its limit")
      total += n
      if (n < limit) return total
    }
  })

/**
 * Runs `n` effects at once (racer `i` runs `f(i)`), each starting after a
 * yield so that they interleave, and answers every racer's exit.
 *
 * @category conformance
 * @since 0.1.0
 */
export const race = <A, E, R>(n: number, f: (i: number) => Effect.Effect<A, E, R>) =>
  Effect.all(
    Array.from({ length: n }, (_, i) => Effect.exit(Effect.andThen(Effect.yieldNow, Effect.suspend(() => f(i))))),
    { concurrency: "unbounded" }
  )

/**
 * The values of the racers that succeeded.
 *
 * @category conformance
 * @since 0.1.0
 */
export const successes = <A, E>(exits: ReadonlyArray<Exit.Exit<A, E>>): Array<A> =>
  exits.flatMap((exit) => (Exit.isSuccess(exit) ? [exit.value] : []))

/**
 * The typed errors of the racers that failed; a defect or interruption fails the test.
 *
 * @category conformance
 * @since 0.1.0
 */
export const failures = <A, E>(exits: ReadonlyArray<Exit.Exit<A, E>>): Array<E> =>
  exits.flatMap((exit) => {
    if (Exit.isSuccess(exit)) return []
    const error = Cause.findErrorOption(exit.cause)
    if (Option.isNone(error)) assert.fail(`expected a typed failure, got: ${Cause.pretty(exit.cause)}`)
    return [error.value]
  })

/**
 * The value of a `Some`, failing the test on `None`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const some = <A>(option: Option.Option<A>, what: string): A => {
  if (Option.isNone(option)) return assert.fail(`expected Some (${what}), got None`)
  return option.value
}

/**
 * Asserts `None`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const none = <A>(option: Option.Option<A>, what: string): void => {
  if (Option.isSome(option)) assert.fail(`expected None (${what}), got Some(${show(option.value)})`)
}

const show = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Runs `effect`, which must fail with a typed error (not succeed, not die); answers the error.
 *
 * @category conformance
 * @since 0.1.0
 */
export const expectFailure = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string): Effect.Effect<E, never, R> =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return assert.fail(`${what}: expected a typed failure, got success ${show(exit.value)}`)
    const error = Cause.findErrorOption(exit.cause)
    if (Option.isNone(error)) return assert.fail(`${what}: expected a typed failure, got: ${Cause.pretty(exit.cause)}`)
    return error.value
  })

/**
 * Runs `effect`, which must fail with the error tagged `tag`; answers it.
 *
 * @category conformance
 * @since 0.1.0
 */
export const expectTag = <A, E, R>(effect: Effect.Effect<A, E, R>, tag: string, what: string) =>
  Effect.map(expectFailure(effect, what), (error) => {
    assert.strictEqual((error as { readonly _tag?: unknown })?._tag, tag, `${what}: expected ${tag}, got ${show(error)}`)
    return error as E & Record<string, unknown>
  })

/**
 * Runs `effect`, which must fail with `InvalidInputError` naming `field`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const expectInvalid = <A, E, R>(effect: Effect.Effect<A, E, R>, field: string, what: string) =>
  Effect.map(expectTag(effect, "InvalidInputError", what), (error) => {
    assert.strictEqual(error.field, field, `${what}: InvalidInputError should name \`${field}\`, named \`${String(error.field)}\``)
  })

/**
 * Ids that are not well-formed Unicode: each holds a lone surrogate, which a
 * UTF-8 store would keep as U+FFFD (so "x\uD800y" would be the same key as
 * "x\uFFFDy"). Every store refuses them with `InvalidInputError`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const illFormedIds: ReadonlyArray<readonly [string, string]> = [
  ["a lone high surrogate", "x\uD800y"],
  ["a lone low surrogate", "x\uDFFFy"],
  ["a trailing high surrogate", "x\uD83D"],
  ["a pair in the wrong order", "x\uDE00\uD83Dy"]
]

/**
 * Well-formed ids every store keeps apart and answers exactly as given: the
 * replacement character a UTF-8 store would make of a lone surrogate, a
 * character outside the Basic Multilingual Plane (a surrogate pair), and the
 * id without either.
 *
 * @category conformance
 * @since 0.1.0
 */
export const unicodeTwins = (id: string): ReadonlyArray<string> => [`${id}\uFFFD`, `${id}\uD83D\uDE00`, id]

/**
 * Ids no store accepts (every backend refuses them the same way, before any
 * write): longer than the limit of 200 characters, holding a NUL, or not
 * well-formed Unicode.
 *
 * @category conformance
 * @since 0.1.0
 */
export const badIds: ReadonlyArray<readonly [string, string]> = [
  ["201 characters", "x".repeat(201)],
  ["10 MB", "x".repeat(10 * 1024 * 1024)],
  ["a NUL character", "a\u0000b"],
  ...illFormedIds
]

/**
 * A fresh id of exactly the limit (200 characters): every backend keeps and indexes it.
 *
 * @category conformance
 * @since 0.1.0
 */
export const longestId = (id: string): string => id + "y".repeat(200 - id.length)

/**
 * Values no durable store can keep as JSON.
 *
 * @category conformance
 * @since 0.1.0
 */
export const nonJsonValues: ReadonlyArray<readonly [string, unknown]> = [
  ["undefined", undefined],
  ["a function", () => 1],
  ["a bigint", 10n],
  ["a circular object", (() => {
    const o: Record<string, unknown> = {}
    o.self = o
    return o
  })()]
]
