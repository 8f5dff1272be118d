/**
 * A pause's payload is what a step gives LangGraph's `interrupt(value)`:
 * LangGraph writes it as JSON on the spot (and baton keeps it in the pause
 * store), so a value JSON cannot write — a BigInt, a cycle — makes
 * `interrupt` throw JSON's own TypeError ("Do not know how to serialize a
 * BigInt"), which says nothing of the step or the pause. This names both.
 *
 * @since 0.1.0
 */

/**
 * Whether `error` is what `interrupt(value)` throws when JSON cannot write
 * `value`: a TypeError raised while LangGraph builds its `GraphInterrupt`.
 *
 * @category guards
 * @since 0.1.0
 */
export const isUnwritable = (error: unknown): error is TypeError =>
  error instanceof TypeError && /\bGraphInterrupt\b/.test(error.stack ?? "")

/**
 * The step's failure for a payload JSON could not write: names the step,
 * says the payload must be JSON-storable and how to make it so.
 *
 * @category constructors
 * @since 0.1.0
 */
export const unwritable = (node: string, error: TypeError): Error =>
  new Error(
    `step "${node}": the payload of its interrupt (the pause it asks for) must be JSON-storable, but JSON could not write it (${error.message}): ` +
      "pass plain data — objects, arrays, strings, finite numbers, booleans, null — turn a BigInt into a string or number and break any cycle",
    { cause: error }
  )

/** `error`, or the clearer failure when it is an unwritable interrupt payload of step `node`. */
export const explain = (node: string, error: unknown): unknown => isUnwritable(error) ? unwritable(node, error) : error
