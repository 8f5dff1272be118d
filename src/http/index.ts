/**
 * `baton/http`: HTTP probes, metrics and tenant-scoped control routes for a baton instance.
 *
 * @since 0.1.0
 */
export * as BatonHttp from "./BatonHttp.ts"
