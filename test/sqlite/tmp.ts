/**
 * Temporary SQLite files for tests: a fresh folder per test file, removed at the end.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll } from "vitest"

/** A new temporary folder, deleted (with its files) after the test file ran. */
export const tempDir = (name: string): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), `baton-${name}-`))
  afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A path for a new database file in a fresh temporary folder. */
export const tempDb = (name: string): string => Path.join(tempDir(name), `${name}.db`)
