/**
 * A TCP proxy on 127.0.0.1 in front of the test Postgres server that cuts
 * connections the way a server restart, a failover or `pg_terminate_backend`
 * does: the first `cuts` connections whose client sends a message containing
 * `at` (a piece of SQL text) are closed on both sides right there, before the
 * server sees that message. Every other byte passes through unchanged.
 */
import { Effect, type Scope } from "effect"
import * as Net from "node:net"
import { url } from "./db.ts"

export interface CuttingProxy {
  /** The test server's URL with the proxy's port in place of the server's. */
  readonly url: string
  /** How many connections were cut so far. */
  readonly cut: () => number
}

export const cuttingProxy = (options: { readonly at: string; readonly cuts: number }): Effect.Effect<CuttingProxy, never, Scope.Scope> => {
  const target = new URL(url)
  const sockets = new Set<Net.Socket>()
  let cut = 0
  const acquire = Effect.callback<Net.Server>((resume) => {
    const server = Net.createServer((client) => {
      const upstream = Net.connect(Number(target.port || 5432), target.hostname)
      sockets.add(client).add(upstream)
      const close = () => (client.destroy(), upstream.destroy())
      client.on("error", close).on("close", close)
      upstream.on("error", close).on("close", close)
      upstream.on("data", (chunk: Buffer) => void client.write(chunk))
      client.on("data", (chunk: Buffer) => {
        if (cut < options.cuts && chunk.includes(options.at)) {
          cut++
          return close()
        }
        upstream.write(chunk)
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  })
  return Effect.acquireRelease(acquire, (server) =>
    Effect.sync(() => {
      sockets.forEach((s) => s.destroy())
      server.close()
    })).pipe(
      Effect.map((server) => {
        const proxied = new URL(url)
        proxied.hostname = "127.0.0.1"
        proxied.port = String((server.address() as Net.AddressInfo).port)
        return { url: proxied.toString(), cut: () => cut }
      })
    )
}
