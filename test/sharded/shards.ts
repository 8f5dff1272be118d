/**
 * What the sharded tests share: a rule spreading tenants over shards by a
 * hash of the tenant id.
 */

/** A rule: tenant → one of `names`, by a hash of the id (the same tenant always to the same shard). */
export const byHash = (names: ReadonlyArray<string>) => (tenantId: string): string => {
  let h = 0
  for (let i = 0; i < tenantId.length; i++) h = (h * 31 + tenantId.charCodeAt(i)) >>> 0
  return names[h % names.length]!
}
