/**
 * `baton/http`: HTTP probes, metrics and tenant-scoped control routes for a baton instance, and
 * `BatonProcess.runMain` to run one as a Node process that stops gracefully on SIGTERM.
 *
 * @since 0.1.0
 * @module baton/http
 */
export * as BatonHttp from "./BatonHttp.ts"
export * as BatonProcess from "./BatonProcess.ts"
