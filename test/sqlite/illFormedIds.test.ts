/**
 * Ids with a lone surrogate on SQLite (a real file): refused before anything
 * is written, so tenant "x\uD800y" never becomes tenant "x\uFFFDy".
 */
import { describe, it } from "@effect/vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { atBuild, scenario } from "../illFormedIds.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("ill-formed-ids")

describe("ill-formed ids on SQLite", () => {
  it.effect("a tenant with a lone surrogate is refused; its UTF-8 twin sees nothing of it; every other id is refused the same way", () =>
    scenario(SqliteStores.layer({ path })))

  it.effect("an ill-formed workflow name or instance id fails at Layer build, naming the field", () => atBuild(SqliteStores.layer({ path })))
})
