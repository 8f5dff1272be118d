/**
 * `LeaseStore.takeOver` over any `SqlClient`: one conditional `UPDATE …
 * RETURNING`, atomic on SQLite and Postgres without a transaction. The row
 * passes to the new holder with epoch + 1 only while it is still the dead
 * holder's (same holder, same epoch); its expiry is not looked at.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { SqlClient } from "effect/sql"
import type { Lease } from "../../../src/stores/Lease.ts"
import type { LeaseStoreShape } from "../../../src/stores/LeaseStore.ts"
import { num, run } from "./rows.ts"

/**
 * The operation on the lease table `leases` (its quoted name).
 *
 * @category constructors
 * @since 0.1.0
 */
export const takeOver = (sql: SqlClient.SqlClient, leases: string): NonNullable<LeaseStoreShape["takeOver"]> =>
(current, holder, ttl, now) =>
  run("LeaseStore", "takeOver", () =>
    Effect.map(
      sql`UPDATE ${sql(leases)} SET holder = ${holder}, epoch = epoch + 1, expires_at = ${now + ttl}
          WHERE tenant_id = ${current.tenantId} AND root_execution_id = ${current.rootExecutionId}
            AND holder = ${current.holder} AND epoch = ${current.epoch}
          RETURNING holder, epoch, expires_at`,
      (rows: ReadonlyArray<any>): Option.Option<Lease> =>
        rows.length === 0 ? Option.none() : Option.some({
          tenantId: current.tenantId,
          rootExecutionId: current.rootExecutionId,
          holder: rows[0].holder,
          epoch: num(rows[0].epoch),
          expiresAt: num(rows[0].expires_at)
        })
    ))
