/**
 * The package's entry points and the TypeScript source of each, read from
 * package.json's `"exports"` (`./dist/src/index.js` is built from
 * `./src/index.ts`): what lets the examples, benchmarks and tests import
 * `"baton"` and `"baton/<entry>"` from a clone without a build.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** The repository's root folder. */
export const root = fileURLToPath(new URL("../../", import.meta.url))

/** An entry point: its import name, and its source file relative to the root. */
export interface Entry {
  readonly name: string
  readonly source: string
}

/** Every entry point of package.json's `"exports"` that has code. */
export const entries = (): ReadonlyArray<Entry> => {
  const manifest = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as {
    readonly name: string
    readonly exports: Record<string, string | { readonly import?: string }>
  }
  return Object.entries(manifest.exports).flatMap(([path, target]) =>
    typeof target === "object" && target.import !== undefined
      ? [{
        name: path === "." ? manifest.name : `${manifest.name}/${path.slice(2)}`,
        source: target.import.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts")
      }]
      : []
  )
}
