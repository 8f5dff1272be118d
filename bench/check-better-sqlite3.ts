/**
 * `npm run bench:check`: does better-sqlite3 load on this Node?
 *
 * better-sqlite3 is a native addon used only by the benchmarks, to compare
 * with LangGraph's official SqliteSaver. `npm ci` compiles it against the
 * headers `.npmrc`'s `nodedir` names; when those are not the running Node's,
 * it fails to load (`NODE_MODULE_VERSION` mismatch). This check used to run as
 * a `prepare` script, which would also have run on every install of the
 * package; it is a developer's check, so it lives here (and in `.ci/run`).
 */
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)
try {
  const Database = require("better-sqlite3") as new(path: string) => { close(): void }
  new Database(":memory:").close()
  console.log(`better-sqlite3 loads on Node ${process.version}`)
} catch (error) {
  console.warn(
    `baton: better-sqlite3 (used only by the benchmarks, to compare with LangGraph's SqliteSaver) does not load on Node ${process.version}: ${
      (error as Error).message
    } -- check .npmrc nodedir, then: npm rebuild better-sqlite3`
  )
}
