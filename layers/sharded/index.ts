/**
 * Tenants over several store bundles: `ShardedStores.layer` routes every
 * store call by its tenant to one of N bundles (N databases), runs the
 * sweeps and claims over every shard, and provides `StorePartitions` so that
 * the runtime runs a leader (retention, schedules) per shard.
 *
 * @since 0.1.0
 * @module baton/sharded
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as ShardedStores from "./ShardedStores.ts"
