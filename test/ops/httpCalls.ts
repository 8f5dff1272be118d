/**
 * What the HTTP tests call the server with: the tenant in an `x-tenant`
 * header (the test apps' `authorize`), and a JSON POST on 127.0.0.1.
 */
import { Effect } from "effect"
import type { BatonHttp } from "../../src/http/index.ts"

/** The caller's tenant from the `x-tenant` header; none: refused. */
export const tenantHeader: BatonHttp.Authorize = (request) =>
  typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined

/** POSTs `body` as JSON for `tenant`: the status and the JSON answer. */
export const post = (port: number, path: string, body: unknown, tenant = "acme") =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-tenant": tenant },
      body: JSON.stringify(body)
    })
    return { status: response.status, body: await response.json() as any }
  })
