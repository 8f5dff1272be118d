/**
 * The direction of imports is the architecture: runtime → contracts,
 * checkpoint → contracts, backends → contracts (and the shared SQL stores),
 * never back, never around in a cycle. This test reads the import graph of
 * `src/` and `layers/` from the files themselves.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { describe, expect, it } from "vitest"
import { entries as sourceEntries } from "../tools/source/entries.ts"

const root = join(import.meta.dirname, "..")

const sourceFiles = (folder: string): Array<string> =>
  readdirSync(join(root, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))

const importPattern = /(?:^|\n)\s*(?:import|export)\b[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']/g

/** Each file's relative imports (type-only ones too: a type cycle is still a tangle), as root-relative paths. */
const importGraph = (files: ReadonlyArray<string>): Map<string, Array<string>> =>
  new Map(files.map((file) => {
    const text = readFileSync(join(root, file), "utf8")
    const targets = [...text.matchAll(importPattern)].map((m) => normalize(join(dirname(file), m[1]!)))
    return [file, targets]
  }))

/** Strongly connected components with more than one file (or a file importing itself): the cycles. */
const cycles = (graph: Map<string, Array<string>>): Array<Array<string>> => {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter)
    counter++
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

const graph = importGraph([...sourceFiles("src"), ...sourceFiles("layers")])
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })))
const within = (path: string, folder: string) => path.startsWith(folder + "/")
const violations = (rule: (from: string, to: string) => boolean) =>
  edges.filter(({ from, to }) => rule(from, to)).map(({ from, to }) => `${from} → ${to}`)

const backends = ["memory", "sqlite", "pg"]
const backendOf = (path: string) => backends.find((b) => within(path, `layers/${b}`))

describe("the import graph of src/ and layers/", () => {
  it("reads the files it judges", () => {
    expect(graph.size).toBeGreaterThan(50)
    expect(graph.get("src/runtime/Baton.ts")).toContain("src/stores/RecordStore.ts")
  })

  it("has no cycle", () => {
    expect(cycles(graph)).toEqual([])
  })

  it("finds a cycle when there is one (the checker itself)", () => {
    const tangled = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    expect(cycles(tangled)).toEqual([["a", "b", "c"]])
  })

  it("src/ never imports a backend from layers/ (but the `baton` executable, which wires them)", () => {
    expect(violations((from, to) => within(from, "src") && within(to, "layers") && from !== "src/cli/main.ts")).toEqual([])
  })

  it("the store contracts import nothing but contracts and domain types", () => {
    expect(violations((from, to) => within(from, "src/stores") && !within(to, "src/stores"))).toEqual([])
  })

  it("the checkpoint saver imports only contracts and itself", () => {
    expect(violations((from, to) =>
      within(from, "src/checkpoint") && !within(to, "src/stores") && !within(to, "src/checkpoint")
    )).toEqual([])
  })

  it("the runtime's internals are imported only by the runtime and the test harness", () => {
    expect(violations((from, to) =>
      within(to, "src/runtime/internal") && !within(from, "src/runtime") && !within(from, "src/testing")
    )).toEqual([])
  })

  it("the runtime and the contracts never import the testing entry", () => {
    expect(violations((from, to) => !within(from, "src/testing") && within(to, "src/testing"))).toEqual([])
  })

  it("no backend folder imports another (memory, sqlite, pg; all may use the shared layers/sql)", () => {
    expect(violations((from, to) => {
      const a = backendOf(from)
      const b = backendOf(to)
      return b !== undefined && a !== b
    })).toEqual([])
  })

  it("the HTTP endpoints use the public runtime and contracts only; nothing else imports them", () => {
    expect(violations((from, to) => within(from, "src/http") && within(to, "src/runtime/internal"))).toEqual([])
    expect(violations((from, to) => !within(from, "src/http") && within(to, "src/http"))).toEqual([])
  })

  it("backends speak to the contracts, never to the runtime", () => {
    expect(violations((from, to) => within(from, "layers") && within(to, "src/runtime"))).toEqual([])
  })
})

/** The folders of the runtime (its public modules, and each subsystem of its internals) with the modules each holds. */
const runtimeFolders = (): Map<string, Array<string>> => {
  const folders = new Map<string, Array<string>>()
  for (const file of sourceFiles("src/runtime")) {
    const folder = dirname(file)
    folders.set(folder, [...(folders.get(folder) ?? []), file])
  }
  return folders
}

/** A call of a store's renewal: a lease, a slot or a claim (`this.renew` is the saver asking its fence, not a store). */
const renewalCall = /(?<!this)\.(?:renew|renewSlot|renewClaim)\(/

/** The files outside the lease primitive that renew a lease themselves (the contracts and their conformance suites may). */
const renewersOutsideLease = (files: ReadonlyArray<string>, read: (file: string) => string): Array<string> =>
  files.filter((file) =>
    !within(file, "src/runtime/internal/lease") && !within(file, "src/stores") && !within(file, "src/testing/conformance") &&
    read(file).split("\n").some((line) => renewalCall.test(line) && !/^\s*(\*|\/\/)/.test(line))
  )

describe("the runtime's rooms", () => {
  it("no folder of the runtime holds more than 12 modules", () => {
    const crowded = [...runtimeFolders()].filter(([, files]) => files.length > 12).map(([folder, files]) => `${folder}: ${files.length}`)
    expect(runtimeFolders().size).toBeGreaterThan(5)
    expect(crowded).toEqual([])
  })

  it("only the lease primitive (src/runtime/internal/lease) renews a lease", () => {
    const files = sourceFiles("src")
    expect(renewersOutsideLease(files, (file) => readFileSync(join(root, file), "utf8"))).toEqual([])
  })

  it("finds a module that renews a lease of its own (the checker itself)", () => {
    const texts: Record<string, string> = {
      "src/runtime/internal/children/Worker.ts": "yield* queue.renewClaim(tenantId, id, holder, ttl, now)",
      "src/runtime/internal/lease/KeptLease.ts": "store.renewSlot(slot, ttl, now)",
      "src/checkpoint/CheckpointSaver.ts": "await this.renew(config)",
      "src/runtime/limits/Quota.ts": " * renews with store.renew(lease) — a comment"
    }
    expect(renewersOutsideLease(Object.keys(texts), (file) => texts[file]!)).toEqual(["src/runtime/internal/children/Worker.ts"])
  })
})

/** A statement naming the lease table: `sql(t.leases)`, `sql(leasesTable)`, or its name in a template. */
const leaseTableStatement = /\bsql\(\s*[\w.]*leases\w*\s*\)|\$\{\s*[\w.]*leases\s*\}/i

/** The SQL modules outside `internal/leaseRows.ts` (and the migrations, which create the table) with a statement over the lease table. */
const leaseSqlOutsideLeaseRows = (files: ReadonlyArray<string>, read: (file: string) => string): Array<string> =>
  files.filter((file) =>
    file !== join("layers", "sql", "internal", "leaseRows.ts") && file !== join("layers", "sql", "SqlMigrations.ts") &&
    read(file).split("\n").some((line) => leaseTableStatement.test(line) && !/^\s*(\*|\/\/)/.test(line))
  )

describe("the lease rows", () => {
  it("only layers/sql/internal/leaseRows.ts writes statements over the lease table (the migrations create it)", () => {
    const files = [...sourceFiles("layers/sql"), ...sourceFiles("layers/pg"), ...sourceFiles("layers/sqlite")]
    expect(files).toContain(join("layers", "sql", "internal", "leaseRows.ts"))
    expect(leaseSqlOutsideLeaseRows(files, (file) => readFileSync(join(root, file), "utf8"))).toEqual([])
  })

  it("finds a statement over the lease table elsewhere (the checker itself)", () => {
    const texts: Record<string, string> = {
      [join("layers", "sql", "SqlLeaseStore.ts")]: "    const leases = sql(t.leases)",
      [join("layers", "sql", "internal", "fence.ts")]: "  sql`SELECT 1 FROM ${sql(leasesTable)} WHERE tenant_id = ${id}`",
      [join("layers", "sql", "SqlCheckpointStore.ts")]: "      sql`UPDATE ${leases} SET expires_at = ${at}`",
      [join("layers", "sql", "SqlPauseStore.ts")]: "      WHERE EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})",
      [join("layers", "sql", "internal", "leaseRows.ts")]: "  sql`SELECT 1 FROM ${sql(table)}`"
    }
    expect(leaseSqlOutsideLeaseRows(Object.keys(texts), (file) => texts[file]!)).toEqual([
      join("layers", "sql", "SqlLeaseStore.ts"),
      join("layers", "sql", "internal", "fence.ts"),
      join("layers", "sql", "SqlCheckpointStore.ts")
    ])
  })
})

describe("the public surface", () => {
  const entries = sourceEntries().map((entry) => ({ name: entry.name, file: entry.source }))
  const statements = (file: string) =>
    readFileSync(join(root, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").split("\n").map((l) => l.trim()).filter((l) => l.length > 0 && !l.startsWith("//"))

  it("every entry point exports namespaces only, one per module (no named exports, no export *)", () => {
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(["baton", "baton/testing", "baton/memory", "baton/sqlite", "baton/pg", "baton/http"]))
    for (const entry of entries) {
      const other = statements(entry.file).filter((l) => !/^export \* as \w+ from "\.\/[^"]+\.ts"$/.test(l) && !/^import "[^"]+"$/.test(l))
      expect(other, entry.name).toEqual([])
    }
  })

  it("README's table of entry points names every namespace of each", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    for (const entry of entries) {
      const row = readme.split("\n").find((l) => l.startsWith(`| \`${entry.name}\` |`))
      expect(row, entry.name).toBeDefined()
      const names = statements(entry.file).flatMap((l) => /^export \* as (\w+)/.exec(l)?.slice(1) ?? [])
      expect(names.filter((n) => !row!.includes(`\`${n}\``)), entry.name).toEqual([])
    }
  })

  it("package.json's exports name only what the package ships; tsconfig.json maps each entry to its source", () => {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      readonly files: ReadonlyArray<string>
      readonly exports: Record<string, string | Record<string, string>>
    }
    const targets = Object.values(manifest.exports).flatMap((t) => typeof t === "string" ? [t] : Object.values(t))
    const shipped = (target: string) => target === "./package.json" || manifest.files.some((f) => target.startsWith(`./${f}/`))
    expect(targets.filter((t) => !shipped(t))).toEqual([])
    const tsconfig = JSON.parse(readFileSync(join(root, "tsconfig.json"), "utf8").replace(/^\s*\/\/.*$/gm, "")) as {
      readonly compilerOptions: { readonly paths: Record<string, ReadonlyArray<string>> }
    }
    expect(tsconfig.compilerOptions.paths).toEqual(Object.fromEntries(entries.map((e) => [e.name, [`./${e.file}`]])))
  })

  it("no public module exports what its own docs call internal", () => {
    const modules = [...sourceFiles("src"), ...sourceFiles("layers")].filter((f) => !f.split("/").includes("internal"))
    // `@category internal` or an `@internal` tag: the declarations drop neither, but the module's JS namespace would still carry it.
    const marked = modules.filter((f) => /@category internal\b|^\s*\*\s*@internal\b/m.test(readFileSync(join(root, f), "utf8")))
    expect(marked).toEqual([])
  })
})
