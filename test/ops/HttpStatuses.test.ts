/**
 * The statuses of `baton/http` come from one table over the calls' error
 * unions: each error answers its own status, a store fault by whether a
 * retry can fix it, anything undeclared 500.
 */
import { assert, describe, it } from "vitest"
import { BatonHttp } from "../../src/http/index.ts"
import { BatonErrors, StoreErrors } from "../../src/index.ts"

describe("HTTP statuses from the errors", () => {
  it("each declared error answers its status; a store fault 503 when retryable, 500 when not; the rest 500", () => {
    assert.strictEqual(BatonHttp.statusOf(new StoreErrors.NotPausedError({ tenantId: "t", pauseId: "p", status: "Resolved" })), 409)
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.ThreadOwnerError({ tenantId: "t", threadId: "th" })), 403)
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.UnknownExecutionError({ tenantId: "t", executionId: "e" })), 404)
    assert.strictEqual(BatonHttp.statusOf(new BatonErrors.InstanceStoppingError({ instanceId: "i" })), 503)
    assert.strictEqual(BatonHttp.statusOf(new StoreErrors.StoreError({ store: "s", operation: "o", reason: "reset", kind: "Connection" })), 503)
    assert.strictEqual(BatonHttp.statusOf(new StoreErrors.StoreError({ store: "s", operation: "o", reason: "too long", kind: "Data" })), 500)
    assert.strictEqual(BatonHttp.statusOf({ _tag: "SomethingElse" }), 500)
  })
})
