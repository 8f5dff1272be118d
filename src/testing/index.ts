/**
 * `baton/testing`: what tests of baton — and of a custom store — use.
 *
 * @since 0.1.0
 * @module baton/testing
 */
export * from "./conformance/index.ts"
export * as Harness from "./Harness.ts"
