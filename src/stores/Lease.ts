/**
 * The lease of one execution tree.
 *
 * @since 0.1.0
 */
import type { ExecutionId, InstanceId, TenantId } from "./Ids.ts"

/**
 * The right of one instance to move one execution tree, until `expiresAt`.
 * `epoch` grows by one every time the lease passes to a new holder, so a write
 * made under an older epoch can be refused (fencing).
 *
 * @category models
 * @since 0.1.0
 */
export interface Lease {
  readonly tenantId: TenantId
  readonly rootExecutionId: ExecutionId
  readonly holder: InstanceId
  readonly epoch: number
  /** Epoch milliseconds, from the acquirer's Clock. */
  readonly expiresAt: number
}

/**
 * The instance a holder id names: the runtime's holder ids are
 * `instanceId#incarnation.n`, so what comes before the last `#` (a holder
 * id without one is its own instance).
 *
 * @category utils
 * @since 0.1.0
 */
export const instanceOfHolder = (holder: string): InstanceId => {
  const at = holder.lastIndexOf("#")
  return at > 0 ? holder.slice(0, at) : holder
}
