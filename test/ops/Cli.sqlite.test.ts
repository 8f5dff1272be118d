/** The `baton` executable against a SQLite file (see cliSuite). */
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { cliSuite } from "./cliSuite.ts"

const path = tempDb("cli")
cliSuite({
  name: "SQLite",
  args: () => ["--sqlite", path],
  env: () => ({ BATON_SQLITE: path }),
  envAlias: () => ({ BATON_SQLITE_PATH: path }),
  stores: () => SqliteStores.layer({ path })
})
