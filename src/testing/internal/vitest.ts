/**
 * `@effect/vitest`, loaded for the conformance suites only after checking
 * that the test runner beside it is one they work with: vitest 5 and
 * `@effect/vitest` 4, the optional peers of `baton/testing`. Without them
 * (or with an older vitest, which npm may resolve on an older Node with only
 * a warning about the peer range), importing `baton/testing` fails at once
 * with an error naming the packages to install, instead of a module
 * resolution error from inside a suite or a test run that breaks later.
 */
import { createRequire } from "node:module"

/** The install line the error gives. */
export const installLine = "npm i -D vitest@^5 @effect/vitest@^4.0.5"

/**
 * What is wrong with the vitest found (its version, or undefined when none is installed), or
 * undefined when it is one the suites work with (5.x).
 */
export const vitestProblem = (version: string | undefined): string | undefined => {
  if (version === undefined) return `baton/testing needs vitest 5 and @effect/vitest 4, and vitest is not installed: ${installLine}`
  const major = Number(version.split(".")[0])
  return major === 5
    ? undefined
    : `baton/testing needs vitest 5 and @effect/vitest 4, and the vitest installed is ${version}: ${installLine}`
}

/** The version of the package `name` as resolved from here, or undefined when it is not installed. */
const versionOf = (name: string): string | undefined => {
  try {
    const require = createRequire(import.meta.url)
    return (require(`${name}/package.json`) as { readonly version: string }).version
  } catch {
    return undefined
  }
}

const problem = vitestProblem(versionOf("vitest")) ??
  (versionOf("@effect/vitest") === undefined
    ? `baton/testing needs vitest 5 and @effect/vitest 4, and @effect/vitest is not installed: ${installLine}`
    : undefined)
if (problem !== undefined) throw new Error(problem)

const effectVitest = await import("@effect/vitest")

/** `@effect/vitest`'s `assert`. */
export const assert: typeof import("@effect/vitest").assert = effectVitest.assert

/** `@effect/vitest`'s `layer`. */
export const layer: typeof import("@effect/vitest").layer = effectVitest.layer
