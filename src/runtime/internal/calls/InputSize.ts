/**
 * The size limit on what a caller hands the runtime to store: a start's
 * input and a pause's decision, measured as the UTF-8 bytes of their JSON
 * (how the stores keep them). One over the limit is refused with
 * `InvalidInputError` before anything is written — a store could not hold
 * it, or would hold what no step should have to read back. The limit is
 * `maxInputBytes` of the configuration (default 1 MiB, the same as the
 * default body limit of `baton/http`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { BatonConfigError, InvalidInputError } from "../../../stores/Errors.ts"

/**
 * The default limit: 1 MiB.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultMaxInputBytes = 1024 * 1024

/**
 * The largest limit that may be set: 256 MiB (no store keeps a larger value in one row).
 *
 * @category constants
 * @since 0.1.0
 */
export const maxMaxInputBytes = 256 * 1024 * 1024

const encoder = new TextEncoder()

/**
 * The UTF-8 bytes of a value's JSON, or undefined when it has none.
 *
 * @category utils
 * @since 0.1.0
 */
export const jsonBytes = (value: unknown): number | undefined => {
  const text = JSON.stringify(value)
  return text === undefined ? undefined : encoder.encode(text).length
}

/**
 * Refuses `value` (the `field` of `operation`) when its JSON is over `limit` bytes (the
 * configuration's `maxInputBytes`; unset, 1 MiB).
 *
 * @category checks
 * @since 0.1.0
 */
export const check = (
  operation: string,
  field: string,
  value: unknown,
  limit: number | undefined = defaultMaxInputBytes
): Effect.Effect<void, InvalidInputError> =>
  Effect.suspend(() => {
    let bytes: number | undefined
    try {
      bytes = jsonBytes(value)
    } catch {
      return Effect.void // not JSON: the JSON check refuses it under its own reason
    }
    return bytes === undefined || bytes <= limit
      ? Effect.void
      : Effect.fail(new InvalidInputError({
        operation,
        field,
        reason: `is ${bytes} bytes as JSON, over the limit of ${limit} bytes (the maxInputBytes option): nothing was written; pass a reference (an id, a URL) to large data instead`
      }))
  })

/**
 * Checks the `maxInputBytes` option: a whole number of bytes from 1 to 256 MiB.
 *
 * @category checks
 * @since 0.1.0
 */
export const validate = (value: unknown): Effect.Effect<void, BatonConfigError> =>
  value === undefined || (typeof value === "number" && Number.isSafeInteger(value) && value >= 1 && value <= maxMaxInputBytes)
    ? Effect.void
    : Effect.fail(new BatonConfigError({
      field: "maxInputBytes",
      reason: `must be a whole number of bytes from 1 to ${maxMaxInputBytes} (256 MiB) (got ${typeof value === "string" ? JSON.stringify(value) : String(value)})`
    }))
