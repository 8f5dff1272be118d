/**
 * The package as `npm pack` makes it, built and packed once for every test file
 * that needs it (the consumer test, the docs' samples). `npm run build` empties
 * `dist/` first, so two files building at once would break each other: the
 * first caller builds and packs under a lock directory, the others wait for it
 * and reuse the tarball. The tarball is kept under `.tmp/packed/<hash>/`, the
 * hash being of everything that goes into it (sources, manifests, lock file,
 * README), so a later run with the same sources reuses it too.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** What `npm pack --json` says about the tarball, and where it is. */
export interface Packed {
  readonly filename: string
  readonly size: number
  readonly unpackedSize: number
  readonly files: ReadonlyArray<{ readonly path: string }>
  /** The tarball's absolute path. */
  readonly path: string
}

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(path) : [path]
  })

const contentHash = () => {
  const hash = createHash("sha256")
  const files = [
    ...filesUnder(join(root, "src")),
    ...filesUnder(join(root, "layers")),
    ...readdirSync(join(root, "docs")).filter((f) => /\.(md|png)$/.test(f)).map((f) => join(root, "docs", f)),
    ...filesUnder(join(root, "examples")),
    ...["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "README.md", "LICENSE"].map((f) => join(root, f))
  ].sort()
  for (const file of files) hash.update(file.slice(root.length)).update("\0").update(readFileSync(file)).update("\0")
  return hash.digest("hex").slice(0, 16)
}

const npm = (args: ReadonlyArray<string>) => {
  try {
    return execFileSync("npm", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(`npm ${args.join(" ")} failed:\n${e.stdout ?? ""}\n${e.stderr ?? e.message}`)
  }
}

/** Builds and packs the package, or waits for the caller that is doing it; answers the tarball. */
export const packOnce = async (): Promise<Packed> => {
  const base = join(root, ".tmp", "packed")
  mkdirSync(base, { recursive: true })
  const dir = join(base, contentHash())
  const done = join(dir, "pack.json")
  const lock = `${dir}.lock`
  const deadline = Date.now() + 240_000
  while (!existsSync(done)) {
    let mine = false
    try {
      mkdirSync(lock)
      mine = true
    } catch {
      // another test file holds the lock; a lock older than the deadline is a dead run's
      const held = statSync(lock, { throwIfNoEntry: false })
      if (held !== undefined && Date.now() - held.mtimeMs > 240_000) rmSync(lock, { recursive: true, force: true })
    }
    if (mine) {
      try {
        if (!existsSync(done)) {
          for (const old of readdirSync(base)) if (!old.endsWith(".lock")) rmSync(join(base, old), { recursive: true, force: true })
          mkdirSync(dir, { recursive: true })
          npm(["run", "build"])
          const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir])) as Array<Omit<Packed, "path">>
          writeFileSync(done, JSON.stringify({ ...packed!, path: join(dir, packed!.filename) }))
        }
      } finally {
        rmSync(lock, { recursive: true, force: true })
      }
    } else {
      if (Date.now() > deadline) throw new Error(`waited 240 s for another test to pack the package (lock ${lock})`)
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
  return JSON.parse(readFileSync(done, "utf8")) as Packed
}
