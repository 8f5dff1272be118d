/**
 * The checks of `Baton`'s own arguments, before anything reads them: a caller
 * from JavaScript (or past the types) that passes no workflow, no handle or no
 * options object gets `InvalidInputError` naming the argument, never a
 * `TypeError` defect; a malformed id or timeout is refused under the call's
 * own name. Payloads are checked by the workflow's schemas where they are used.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { InvalidInputError } from "../../../stores/Errors.ts"
import * as V from "../../../stores/internal/validate.ts"

type Check = Effect.Effect<void, InvalidInputError>

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const refuse = (operation: string, field: string, reason: string, value: unknown): Check =>
  Effect.fail(new InvalidInputError({ operation, field, reason: `${reason} (got ${value === null ? "null" : typeof value})` }))

/**
 * A workflow made with `Workflow.make` (a name and a config hash).
 *
 * @category internal
 * @since 0.1.0
 */
export const workflow = (operation: string, value: unknown): Check =>
  isObject(value) && typeof value.name === "string" && typeof value.configHash === "string"
    ? Effect.void
    : refuse(operation, "workflow", "must be a workflow made with Workflow.make", value)

/**
 * What `await` waits for: an execution id, or the handle `start` answered.
 *
 * @category internal
 * @since 0.1.0
 */
export const awaitTarget = (value: unknown): Check =>
  typeof value === "string" || isObject(value)
    ? Effect.void
    : refuse("Baton.await", "target", "must be an execution id or the handle start answered", value)

/**
 * A required options object (`pendingPauses`' options, `resume`'s input).
 *
 * @category internal
 * @since 0.1.0
 */
export const object = (operation: string, field: string, shape: string, value: unknown): Check =>
  isObject(value) ? Effect.void : refuse(operation, field, `must be an object ${shape}`, value)


/**
 * The ids a call names, refused under the call's own name rather than the
 * store call behind it: each `required` one, and each `optional` one given,
 * must be non-empty, at most 200 characters, with no NUL (what the stores keep).
 */
const ids = (operation: string, optional: Readonly<Record<string, unknown>>, required: Readonly<Record<string, unknown>> = {}): Check =>
  Effect.all([
    ...Object.entries(required).map(([field, value]) => V.nonEmpty(operation, field, value)),
    ...Object.entries(optional)
      .filter(([field, value]) => !(field in required) && value !== undefined && value !== null)
      .map(([field, value]) => V.nonEmpty(operation, field, value))
  ], { discard: true })

/**
 * An optional options object: none (undefined or null) or an object — a
 * string or a number is refused, not read as no options.
 *
 * @category internal
 * @since 0.1.0
 */
export const options = (operation: string, value: unknown): Check =>
  value === undefined || value === null || isObject(value)
    ? Effect.void
    : refuse(operation, "options", "must be an object such as { tenantId, ownerId }, or left out", value)

/**
 * The call's options object (see `options`) and its ids (tenant, owner,
 * thread, request key), plus the call's `required` ones.
 *
 * @category internal
 * @since 0.1.0
 */
export const scope = (operation: string, value: unknown, required: Readonly<Record<string, unknown>> = {}): Check => {
  const o = isObject(value) ? value : {}
  return Effect.andThen(
    options(operation, value),
    ids(operation, { tenantId: o.tenantId, ownerId: o.ownerId, threadId: o.threadId, requestKey: o.requestKey }, required)
  )
}
