/**
 * The order in which one instance visits the roots of a sweep page.
 *
 * Every instance pages the Running records in the same key order. Visiting
 * each page in that order too, instances that look at the same moment (after
 * a mass failure, or woken by the same release) start recoveries of the same
 * first trees, and all but one of each lose the lease race. Each instance
 * visits a page by its own ranking instead — a hash of its id and the root
 * (rendezvous hashing) — so their picks from one page are spread over it.
 *
 * @since 0.1.0
 */

/** FNV-1a of `text` from `seed`, mixed by murmur3's finalizer so that nearby inputs give unrelated ranks. */
const hash = (text: string, seed: number) => {
  let h = seed
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/**
 * `roots` in the order instance `instanceId` visits them: the same order on
 * every call of that instance, unrelated to another instance's.
 *
 * @category internal
 * @since 0.1.0
 */
export const ofInstance = <A extends { readonly tenantId: string; readonly rootExecutionId: string }>(
  instanceId: string,
  roots: ReadonlyArray<A>
): Array<A> => {
  const seed = hash(instanceId, 0x811c9dc5)
  return roots
    .map((root) => ({ root, rank: hash(`${root.tenantId}\u0000${root.rootExecutionId}`, seed) }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ root }) => root)
}
