/** The `baton` executable against a Postgres schema of its own (see cliSuite). */
import { PgStores } from "../../layers/pg/index.ts"
import { testSchema, url } from "../pg/db.ts"
import { cliSuite } from "./cliSuite.ts"

const schema = testSchema("cli")
cliSuite({
  name: "Postgres",
  args: () => ["--pg", url, "--schema", schema],
  env: () => ({ BATON_PG_URL: url, BATON_PG_SCHEMA: schema }),
  stores: () => PgStores.layer({ url, schema, maxConnections: 2, wakeups: false })
})
