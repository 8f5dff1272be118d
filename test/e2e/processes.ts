/**
 * Real worker processes for the multi-process tests and benchmarks: spawn a
 * `.ts` worker on this Node, read its stdout line by line, wait for a line,
 * send it a line on stdin. Every spawned process is remembered so a test can
 * kill what is left (`killAll`).
 */
import { type ChildProcess, spawn } from "node:child_process"

export interface Proc {
  readonly id: string
  readonly child: ChildProcess
  readonly lines: Array<string>
  /** Resolves with the first line (already seen or to come) that matches; rejects if the process ends first. */
  readonly until: (match: (l: string) => boolean) => Promise<string>
  /** Resolves with the first line from now on that matches; rejects if the process ends first. */
  readonly next: (match: (l: string) => boolean) => Promise<string>
  readonly exited: Promise<number | null>
  readonly stderr: () => string
  readonly send: (line: string) => void
}

const spawned: Array<ChildProcess> = []

/** Starts `node <script> ...args`; `id` names it in debug output (`BATON_E2E_DEBUG`). */
export const start = (script: string, args: ReadonlyArray<string>, id: string): Proc => {
  const debug = process.env.BATON_E2E_DEBUG !== undefined
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "pipe"] })
  spawned.push(child)
  const lines: Array<string> = []
  const waiters: Array<{ match: (l: string) => boolean; resolve: (l: string) => void }> = []
  let buffer = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString()
    let i: number
    while ((i = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, i)
      buffer = buffer.slice(i + 1)
      lines.push(line)
      if (debug) console.log(`${(performance.now() / 1000).toFixed(1)} ${line}`)
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(line)
        }
      }
    }
  })
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => {
    if (debug) console.log(`${id} stderr: ${chunk.toString()}`)
    stderr += chunk.toString()
  })
  child.stdin!.on("error", () => {})
  // "close": the process exited and its output was read to the end.
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
  const next = (match: (l: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      waiters.push({ match, resolve })
      void exited.then((code) => reject(new Error(`${id} exited (code ${code}) before printing the line waited for; its stderr: ${stderr.slice(-2000)}`)))
    })
  const until = (match: (l: string) => boolean) => {
    const seen = lines.find(match)
    return seen !== undefined ? Promise.resolve(seen) : next(match)
  }
  return { id, child, lines, until, next, exited, stderr: () => stderr, send: (line) => void child.stdin!.write(`${line}\n`) }
}

/** SIGKILLs every spawned process still running. */
export const killAll = (): void => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** `promise`, or a rejection naming `what` once `ms` of real time passed (a test's wait on a real process is bounded). */
export const within = <A>(ms: number, what: string, promise: Promise<A>): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined // real time, not the TestClock: real processes
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms) // real processes run on real time, not the TestClock
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}
