/**
 * Tenants over several store bundles: `ShardedStores.layer` routes every
 * store call by its tenant to one of N bundles (N databases), and runs the
 * sweeps, claims and retention of every shard.
 *
 * @since 0.2.0
 * @module baton/sharded
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as ShardedStores from "./ShardedStores.ts"
