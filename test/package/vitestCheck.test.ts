/**
 * What `baton/testing` says about the vitest beside it before loading its
 * suites: nothing for vitest 5; for none, or an older or newer major, the
 * line to install (the consumer test sees the missing case for real).
 */
import { describe, expect, it } from "@effect/vitest"
import { installLine, vitestProblem } from "../../src/testing/internal/vitest.ts"

describe("baton/testing's check of vitest", () => {
  it("accepts vitest 5; names what to install for none, 4.x or 6.x", () => {
    expect(installLine).toBe("npm i -D vitest@^5 @effect/vitest@^4.0.5")
    expect(vitestProblem("5.1.2")).toBeUndefined()
    expect(vitestProblem("5.0.0-beta.3")).toBeUndefined()
    expect(vitestProblem(undefined)).toBe(`baton/testing needs vitest 5 and @effect/vitest 4, and vitest is not installed: ${installLine}`)
    expect(vitestProblem("4.1.0")).toBe(`baton/testing needs vitest 5 and @effect/vitest 4, and the vitest installed is 4.1.0: ${installLine}`)
    expect(vitestProblem("6.0.0")).toContain("the vitest installed is 6.0.0")
  })
})
