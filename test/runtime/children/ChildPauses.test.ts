/**
 * A pause inside a child reaches the parent's caller, on memory and SQLite (see `childPauseCases.ts`).
 */
import { Layer } from "effect"
import { backends } from "../fixtures.ts"
import { childPauseCases } from "./childPauseCases.ts"

for (const backend of backends) childPauseCases(backend.name, () => Layer.fresh(backend.stores))
