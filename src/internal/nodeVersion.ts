/**
 * The Node.js baton runs on, checked first by every entry point and by the
 * `baton` executable: on an older Node (20, where `node:sqlite` and type
 * stripping are missing) the process stops at once with one line saying
 * which Node is needed, instead of a confusing error from deep inside.
 * Kept tiny and free of imports so that it is evaluated before anything else.
 *
 * @since 0.1.0
 */

/**
 * The Node.js versions baton supports, as in the `engines` field of its package.json.
 *
 * @category constants
 * @since 0.1.0
 */
export const required = "^22.16.0 || >=24.0.0"

/**
 * Whether a Node.js version (`process.versions.node`, e.g. "22.16.0") is one baton supports.
 *
 * @category predicates
 * @since 0.1.0
 */
export const supported = (version: string): boolean => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  return major >= 24 || (major === 22 && minor >= 16)
}

/**
 * The one line printed when the running Node.js is not supported.
 *
 * @category constants
 * @since 0.1.0
 */
export const refusal = (version: string): string =>
  `baton needs Node.js ${required} (this is Node.js v${version}): install Node.js 24 (or 22.16 or later) and run again`

const running = typeof process === "object" ? process.versions?.node : undefined
if (typeof running === "string" && !supported(running)) {
  process.stderr.write(refusal(running) + "\n")
  process.exit(1)
}
