/**
 * The Node.js check every entry runs first: the versions it lets through are
 * the package's `engines` (the consumer test runs it for real on Node 20).
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { refusal, required, supported } from "../../src/internal/nodeVersion.ts"

describe("the Node.js version check", () => {
  it("lets through what engines allows, refuses the rest in one line", () => {
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as { engines: { node: string } }
    expect(manifest.engines.node).toBe(required)
    expect(["22.16.0", "22.20.1", "24.0.0", "24.22.3", "25.1.0"].filter(supported)).toEqual(["22.16.0", "22.20.1", "24.0.0", "24.22.3", "25.1.0"])
    expect(["20.20.2", "22.15.1", "23.11.0", "18.0.0", "garbage"].filter(supported)).toEqual([])
    expect(refusal("20.20.2")).toBe("baton needs Node.js ^22.16.0 || >=24.0.0 (this is Node.js v20.20.2): install Node.js 24 (or 22.16 or later) and run again")
  })
})
