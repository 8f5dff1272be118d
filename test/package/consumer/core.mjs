// A user's app without the optional peers (@effect/platform-node, @effect/vitest, vitest): the core
// entries load; baton/http, which needs @effect/platform-node, says which package is missing; and
// baton/testing, which needs vitest 5 and @effect/vitest, says what to install.
const loaded = {}
for (const entry of ["baton", "baton/memory", "baton/sqlite", "baton/pg", "baton/sql", "baton/sharded"]) loaded[entry] = Object.keys(await import(entry)).sort()
const http = await import("baton/http").then(() => "loaded", (error) => `${error.code}: ${String(error.message).includes("@effect/platform-node")}`)
const testing = await import("baton/testing").then(() => "loaded", (error) => String(error.message))
console.log(JSON.stringify({ node: process.version, loaded, http, testing }))
