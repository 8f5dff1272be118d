/**
 * A TCP proxy on 127.0.0.1 in front of a shard's Postgres: `stop` closes
 * its listener and cuts every connection through it, as a server lost
 * mid-run.
 */
import { Effect, type Scope } from "effect"
import * as Net from "node:net"

/**
 * A proxy on 127.0.0.1 to `target`'s host and port (on `port`, else a free one); `stop` closes it and cuts every
 * connection through it.
 */
export const proxy = (target: string, port = 0): Effect.Effect<{ readonly url: string; readonly stop: () => void }, never, Scope.Scope> => {
  const upstream = new URL(target)
  const sockets = new Set<Net.Socket>()
  return Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly stop: () => void }>((resume) => {
      const server = Net.createServer((client) => {
        const up = Net.connect(Number(upstream.port || 5432), upstream.hostname)
        sockets.add(client).add(up)
        const close = () => (client.destroy(), up.destroy())
        client.on("error", close).on("close", close)
        up.on("error", close).on("close", close)
        client.pipe(up)
        up.pipe(client)
      })
      const stop = () => {
        server.close()
        for (const s of sockets) s.destroy()
      }
      server.listen(port, "127.0.0.1", () => {
        const url = new URL(target)
        url.port = String((server.address() as Net.AddressInfo).port)
        resume(Effect.succeed({ url: url.toString(), stop }))
      })
    }),
    ({ stop }) => Effect.sync(stop)
  )
}
