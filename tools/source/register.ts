/**
 * Run a script of the repository against the sources:
 * `node --import ./tools/source/register.ts examples/quickstart.ts`. It
 * resolves `"baton"` and `"baton/<entry>"` to their TypeScript sources, as
 * the tests do, so no build is needed; an installed package loads `dist/`.
 */
import { registerHooks } from "node:module"
import { pathToFileURL } from "node:url"
import { entries, root } from "./entries.ts"

const sources = new Map(entries().map((entry) => [entry.name, pathToFileURL(`${root}${entry.source}`).href]))

registerHooks({
  resolve: (specifier, context, nextResolve) => {
    const source = sources.get(specifier)
    return source === undefined ? nextResolve(specifier, context) : { url: source, shortCircuit: true }
  }
})
