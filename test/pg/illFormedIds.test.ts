/**
 * Ids with a lone surrogate on Postgres: refused before anything is written,
 * so tenant "x\uD800y" never becomes tenant "x\uFFFDy".
 */
import { describe, it } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { atBuild, scenario } from "../illFormedIds.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("ill_formed")

describe("ill-formed ids on Postgres", () => {
  it.effect("a tenant with a lone surrogate is refused; its UTF-8 twin sees nothing of it; every other id is refused the same way", () =>
    scenario(PgStores.layer({ url, schema, maxConnections: 2 })))

  it.effect("an ill-formed workflow name or instance id fails at Layer build, naming the field", () =>
    atBuild(PgStores.layer({ url, schema, maxConnections: 2 })))
})
