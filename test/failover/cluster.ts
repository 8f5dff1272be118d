/**
 * A primary and a hot standby with synchronous streaming replication on
 * 127.0.0.1 (primary 5440, standby 5441 unless `BATON_FAILOVER_PORTS` says
 * `p,s`), made from Debian's PostgreSQL binaries in a fresh folder: `initdb`,
 * `pg_basebackup -R`, `synchronous_standby_names`. Run as the `postgres`
 * user when this process is root (PostgreSQL refuses to run as root).
 * `kill()` stops the primary at once (`pg_ctl stop -m immediate`: no
 * shutdown checkpoint, as a crash), `promote()` makes the standby the
 * primary (`pg_ctl promote`), `destroy()` stops both and removes the folder.
 */
import { execFileSync } from "node:child_process"
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"

const binaries = (() => {
  const root = "/usr/lib/postgresql"
  const version = existsSync(root) ? readdirSync(root).sort().at(-1) : undefined
  return version === undefined ? "" : join(root, version, "bin")
})()

const asRoot = userInfo().uid === 0

/** Runs a PostgreSQL binary, as `postgres` when root. */
const pg = (binary: string, args: ReadonlyArray<string>) => {
  const path = join(binaries, binary)
  if (!existsSync(path)) throw new Error(`${path} is missing: install Debian's postgresql package (it provides initdb, pg_ctl, pg_basebackup)`)
  const command = [path, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")
  return asRoot
    ? execFileSync("su", ["postgres", "-s", "/bin/sh", "-c", command], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    : execFileSync(path, args as Array<string>, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
}

export interface Cluster {
  readonly primaryPort: number
  readonly standbyPort: number
  /** The multi-host URL baton connects with. */
  readonly url: string
  readonly kill: () => void
  readonly promote: () => void
  readonly destroy: () => void
}

const [primaryPort, standbyPort] = (process.env.BATON_FAILOVER_PORTS ?? "5440,5441").split(",").map(Number) as [number, number]

/** Makes and starts the pair; the database `baton` exists on it. */
export const makeCluster = (): Cluster => {
  const dir = mkdtempSync(join(tmpdir(), "baton-failover-"))
  chmodSync(dir, 0o755)
  if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim()), Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim()))
  const primary = join(dir, "primary")
  const standby = join(dir, "standby")
  const ctl = (data: string, ...args: Array<string>) => pg("pg_ctl", ["-D", data, "-l", `${data}.log`, "-w", "-t", "30", ...args])
  pg("initdb", ["-D", primary, "-U", "postgres", "--auth=trust", "--no-sync"])
  appendFileSync(
    join(primary, "postgresql.conf"),
    [
      `port = ${primaryPort}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      "wal_level = replica",
      "max_wal_senders = 5",
      "hot_standby = on",
      "synchronous_commit = on",
      "max_connections = 200",
      "fsync = off",
      // Fast takeover after the kill: a vanished client is noticed within seconds.
      "tcp_keepalives_idle = 5",
      "tcp_keepalives_interval = 1",
      "tcp_keepalives_count = 3",
      ""
    ].join("\n")
  )
  appendFileSync(join(primary, "pg_hba.conf"), "host replication postgres 127.0.0.1/32 trust\n")
  ctl(primary, "start")
  pg("psql", ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-qc", "CREATE DATABASE baton", "postgres"])
  pg("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-D", standby, "-R", "-X", "stream", "--no-sync", "--checkpoint=fast"])
  appendFileSync(
    join(standby, "postgresql.auto.conf"),
    `port = ${standbyPort}\nprimary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=standby1'\n`
  )
  ctl(standby, "start")
  // Synchronous from here (set once the standby runs: before, every commit would wait for it).
  const sql = (statement: string) => pg("psql", ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-Atc", statement, "postgres"]).trim()
  sql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
  sql("SELECT pg_reload_conf()")
  let state = ""
  for (let i = 0; i < 50 && state !== "sync"; i++) {
    state = sql("SELECT sync_state FROM pg_stat_replication")
    if (state !== "sync") execFileSync("sleep", ["0.1"])
  }
  if (state !== "sync") throw new Error(`the standby is not synchronous (pg_stat_replication.sync_state: "${state}")`)
  let stopped = false
  return {
    primaryPort,
    standbyPort,
    url: `postgres://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/baton?target_session_attrs=read-write`,
    kill: () => ctl(primary, "stop", "-m", "immediate"),
    promote: () => ctl(standby, "promote"),
    destroy: () => {
      if (stopped) return
      stopped = true
      for (const data of [primary, standby]) {
        try {
          ctl(data, "stop", "-m", "immediate")
        } catch {}
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** `node test/failover/cluster.ts`: makes the pair, prints its URL, and keeps it until Ctrl-C. */
if (import.meta.main) {
  const cluster = makeCluster()
  console.log(cluster.url)
  const stop = () => (cluster.destroy(), process.exit(0))
  process.on("SIGINT", stop)
  process.on("SIGTERM", stop)
  setInterval(() => {}, 1 << 30)
}
