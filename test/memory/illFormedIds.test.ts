/**
 * Ids with a lone surrogate in memory: refused the same way as on the durable
 * backends (which would keep "x\uD800y" as "x\uFFFDy"), before anything is written.
 */
import { describe, it } from "@effect/vitest"
import { MemoryStores } from "../../layers/memory/index.ts"
import { atBuild, scenario } from "../illFormedIds.ts"

describe("ill-formed ids in memory", () => {
  it.effect("a tenant with a lone surrogate is refused; its UTF-8 twin sees nothing of it; every other id is refused the same way", () =>
    scenario(MemoryStores.layer))

  it.effect("an ill-formed workflow name or instance id fails at Layer build, naming the field", () => atBuild(MemoryStores.layer))
})
