/**
 * The preamble every conformance suite shares, apart from `Suite.ts` so that
 * the declarations of `baton/testing` (which name `SuiteOptions` and
 * `Instances`) do not need `@effect/vitest`: a program using only the
 * `Harness` typechecks without that optional peer.
 *
 * @since 0.1.0
 */
import type { Vitest } from "@effect/vitest"
import { layer } from "../internal/vitest.ts"
import { Context, Effect, type Scope } from "effect"
import { LeaseStore, type LeaseStoreShape } from "../../stores/LeaseStore.ts"
import type { Lease } from "../../stores/Lease.ts"
import { type Instances, instancesKey, instancesLayer, makeIds, racersOf, some, type SuiteOptions } from "./Suite.ts"

/**
 * What one suite starts with: its instances' key, fresh ids, how many racers,
 * and `register`, which registers its tests (see {@link defineSuite}).
 *
 * @category models
 * @since 0.1.0
 */
export interface SuiteDefinition<S> {
  /** The service the suite's tests read both instances from. */
  readonly Stores: Context.Key<Instances<S>, Instances<S>>
  readonly ids: ReturnType<typeof makeIds>
  readonly racers: number
  /**
   * Registers `tests` under "`title` (`options.name`)" on the Layers built once for
   * all of them, after a first test that pings both instances (with `ping`).
   * `tests` gets {@link InstancesTest} `test` and vitest's `it`.
   */
  readonly register: (tests: (test: InstancesTest<S>, it: Vitest.MethodsNonLive<Instances<S>>) => void) => void
}

/**
 * Registers one test whose body starts with both instances:
 * `test(name, function*({ first, second }) { … })` runs as
 * `it.effect(name, () => Effect.gen(function*() { const { first, second } = yield* Stores; … }))`.
 *
 * @category models
 * @since 0.1.0
 */
export type InstancesTest<S> = <Eff extends Effect.Effect<any, any, Instances<S> | Scope.Scope>>(
  name: string,
  body: (stores: Instances<S>) => Generator<Eff, void, never>
) => void

/**
 * The preamble every suite shares: the instances of the service under test
 * (`pick` takes it from the built Layer), fresh ids, the number of racers
 * (`racers`, default {@link racersOf}), and the registration of its tests.
 *
 * @category conformance
 * @since 0.1.0
 */
export const defineSuite = <I, S>(options: SuiteOptions<I>, spec: {
  /** The contract under test: the key's name, and the title "`contract` conformance" unless `title` is given. */
  readonly contract: string
  readonly title?: string | undefined
  readonly pick: (context: Context.Context<I>) => S
  /** One cheap round trip of an instance; without it there is no ping test. */
  readonly ping?: ((service: S) => Effect.Effect<unknown, unknown>) | undefined
  readonly racers?: number | undefined
}): SuiteDefinition<S> => {
  const Stores = instancesKey<S>(spec.contract)
  const title = spec.title ?? `${spec.contract} conformance`
  const register = (tests: (test: InstancesTest<S>, it: Vitest.MethodsNonLive<Instances<S>>) => void) =>
    layer(instancesLayer(Stores, options, spec.pick), { timeout: options.timeout })(`${title} (${options.name})`, (it) => {
      const test: InstancesTest<S> = (name, body) =>
        it.effect(name, () =>
          Effect.flatMap(Stores, (stores) => Effect.gen(() => body(stores)) as Effect.Effect<void, unknown, Instances<S> | Scope.Scope>))
      const ping = spec.ping
      if (ping !== undefined) {
        test("ping succeeds on every instance", function*({ first, second }) {
          yield* ping(first)
          yield* ping(second)
        })
      }
      tests(test, it)
    })
  return { Stores, ids: makeIds(), racers: spec.racers ?? racersOf(options), register }
}

/**
 * The preamble of a suite whose service is one contract's, taken from the
 * built Layer by its key and pinged with its own `ping`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const defineServiceSuite = <I, S extends { readonly ping: Effect.Effect<unknown, unknown> }>(
  options: SuiteOptions<I>,
  contract: string,
  key: Context.Key<I, S>,
  racers?: number
): SuiteDefinition<S> => defineSuite(options, { contract, pick: (ctx) => Context.get(ctx, key), ping: (s) => s.ping, racers })

/**
 * A store under test with the `LeaseStore` over the same database, whose
 * leases its fenced writes check in the same atomic step.
 *
 * @category models
 * @since 0.1.0
 */
export type WithLeases<S> = S & { readonly leases: LeaseStoreShape }

/**
 * The `pick` of a suite whose store fences its writes by lease: the store
 * `tag` names, with the built `LeaseStore` as `leases`. The store stays the
 * prototype of what the tests get, so a store built as a class instance
 * (methods on its prototype) is tested as it is.
 *
 * @category conformance
 * @since 0.1.0
 */
export const withLeases = <I, S>(tag: Context.Key<I, S>) => (context: Context.Context<I | LeaseStore>): WithLeases<S> =>
  Object.assign(Object.create(Context.get(context, tag) as object) as object, { leases: Context.get(context, LeaseStore) }) as WithLeases<S>

/**
 * The preamble of a suite whose store fences its writes by lease: the store
 * `key` names, with the built `LeaseStore` as `leases`, pinged with the
 * store's `ping`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const defineLeasedSuite = <I, S extends { readonly ping: Effect.Effect<unknown, unknown> }>(
  options: SuiteOptions<I | LeaseStore>,
  contract: string,
  key: Context.Key<I, S>
): SuiteDefinition<WithLeases<S>> => defineSuite(options, { contract, pick: withLeases(key), ping: (s) => s.ping })

/**
 * A fresh tree's lease (of `root`) in `store.leases`, held by `holder` for
 * `ttl` from `at`; a refused acquire fails the test.
 *
 * @category conformance
 * @since 0.1.0
 */
export const freshLease = (
  store: { readonly leases: LeaseStoreShape },
  tenantId: string,
  root: string,
  holder: string,
  ttl: number,
  at: number
): Effect.Effect<Lease, unknown> => Effect.map(store.leases.acquire(tenantId, root, holder, ttl, at), (l) => some(l, "acquire"))
