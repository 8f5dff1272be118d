/**
 * The reserved tree keys found across trees (`TreeStore.findRootsWith`), as
 * SQL conditions: the partial index of migration 12 and the queries that
 * read it repeat the same condition (a partial index serves only a query
 * whose WHERE repeats it).
 */
import { reservedPrefix } from "../../../src/stores/TreeStore.ts"

/** A reserved tree key as an SQL string literal (the names are the runtime's own: letters and dashes). */
const keyLiteral = (name: string) => `'${reservedPrefix}${name.replaceAll("'", "''")}'`

/** The condition on `tree_key` that lets a query read the findable keys' index for one findable name. */
export const findableKeyCondition = (name: string): string => `tree_key = ${keyLiteral(name)}`
