/**
 * The passes one instance is moving, owned by the pass subsystem: the tree
 * driver registers each pass for its length, and the rest of the runtime
 * reads them (cancel finds a pass here, close waits for them, the sweep
 * skips their trees, metrics count them) or waits for the next to end.
 *
 * It also counts progress — every step start and end and every pass phase
 * change — so a test harness can tell that nothing moves.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import * as Signal from "../../../stores/internal/signal.ts"

/**
 * A pass this instance is moving (or waiting to move).
 *
 * @category models
 * @since 0.1.0
 */
export interface ActivePass {
  readonly tenantId: string
  readonly rootExecutionId: string
  readonly holder: string
  /** "waiting": for the lease; "running": Effect code of the runtime; "invoking": inside LangGraph's invoke. */
  phase: "waiting" | "running" | "invoking"
  /** Step bodies started and not yet settled (they may outlive an aborted invoke). */
  readonly bodies: Set<Promise<unknown>>
  /** Bodies now waiting on the Clock. */
  parkedBodies: number
  readonly signal: () => AbortSignal | undefined
  readonly abort: (error: unknown) => void
}

/**
 * The instance's passes.
 *
 * @category models
 * @since 0.1.0
 */
export interface PassesShape {
  /** The passes registered now. */
  readonly active: ReadonlySet<ActivePass>
  /** A pass begins: registered until `unregister`. */
  readonly register: (pass: ActivePass) => void
  /** A pass ended: every waiter of `ended` wakes. */
  readonly unregister: (pass: ActivePass) => void
  /** Resolves at the next end of a pass. */
  readonly ended: Effect.Effect<void>
  /** A pass of this instance on the tree `rootExecutionId` of `tenantId`, if any. */
  readonly onTree: (tenantId: string, rootExecutionId: string) => ActivePass | undefined
  /** Something moved (a step started or ended, a pass changed phase). */
  readonly progressed: () => void
  /** How often something moved: a harness compares two reads to see that nothing did. */
  readonly progress: () => number
}

/**
 * No pass yet.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (): PassesShape => {
  const active = new Set<ActivePass>()
  const ends = Signal.make()
  let progress = 0
  return {
    active,
    register: (pass) => {
      active.add(pass)
      progress++
    },
    unregister: (pass) => {
      active.delete(pass)
      progress++
      ends.notify()
    },
    ended: ends.next,
    onTree: (tenantId, rootExecutionId) => {
      for (const pass of active) if (pass.tenantId === tenantId && pass.rootExecutionId === rootExecutionId) return pass
      return undefined
    },
    progressed: () => void progress++,
    progress: () => progress
  }
}

const bodyNames = new WeakMap<Promise<unknown>, string>()

/**
 * Names a step body (its node, and its step key when it has one) for the
 * warnings of a close whose grace ends while it still runs.
 *
 * @category internal
 * @since 0.1.0
 */
export const nameBody = (body: Promise<unknown>, node: string, key?: string): void => {
  bodyNames.set(body, key === undefined ? node : `${node} (${key})`)
}

/**
 * The names of a pass's step bodies still running (see `nameBody`; an unnamed one is "a step body").
 *
 * @category internal
 * @since 0.1.0
 */
export const runningBodies = (pass: ActivePass): ReadonlyArray<string> => [...pass.bodies].map((b) => bodyNames.get(b) ?? "a step body")
