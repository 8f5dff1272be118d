/**
 * `baton/http`: HTTP probes, metrics and tenant-scoped control routes for a baton instance, and
 * `BatonProcess.runMain` to run one as a Node process that stops gracefully on SIGTERM.
 *
 * @since 0.1.0
 * @module baton/http
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../internal/nodeVersion.ts"
export * as BatonHttp from "./BatonHttp.ts"
export * as BatonProcess from "./BatonProcess.ts"
