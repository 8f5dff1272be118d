/**
 * `baton/testing`: what tests of baton — and of a custom store — use.
 *
 * @since 0.1.0
 * @module baton/testing
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../internal/nodeVersion.ts"
export * as Harness from "./Harness.ts"
export * as Conformance from "./conformance/index.ts"
