/**
 * What `baton replay`, `baton golden` and `baton eval` need beyond the
 * stores: the app's workflows, loaded from a module it names, golden case
 * files, and the text a result is shown as.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { readdir, readFile, stat, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as Evaluation from "../../runtime/evaluation/Evaluation.ts"
import type { AnyWorkflow } from "../../runtime/Workflow.ts"

/**
 * The workflows module could not be loaded, or exports no workflow.
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkflowsModuleError extends Schema.TaggedError<WorkflowsModuleError>()("WorkflowsModuleError", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `--workflows ${this.path}: ${this.reason}. Name a module (.js, or .ts on Node 24) that exports the app's workflows (made with Workflow.make), each as an export or in an exported array.`
  }
}

/**
 * A case file or folder that cannot be read.
 *
 * @category errors
 * @since 0.1.0
 */
export class CaseFileError extends Schema.TaggedError<CaseFileError>()("CaseFileError", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.path}: ${this.reason}. Give golden case files (baton golden <execution> --out FILE) or folders of them (*.json).`
  }
}

const isWorkflow = (value: unknown): value is AnyWorkflow =>
  typeof value === "object" && value !== null && typeof (value as AnyWorkflow).name === "string" &&
  typeof (value as AnyWorkflow).configHash === "string" && "graph" in value

/**
 * The workflows a module exports (each export that is one, and those in exported arrays), by name.
 *
 * @category loading
 * @since 0.1.0
 */
export const loadWorkflows = (path: string): Effect.Effect<ReadonlyArray<AnyWorkflow>, WorkflowsModuleError> =>
  Effect.gen(function*() {
    const module = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(resolve(path)).href) as Promise<Record<string, unknown>>,
      catch: (e) => new WorkflowsModuleError({ path, reason: `it could not be imported (${e instanceof Error ? e.message : String(e)})` })
    })
    const found = new Map<string, AnyWorkflow>()
    for (const value of Object.values(module)) {
      for (const candidate of Array.isArray(value) ? value : [value]) if (isWorkflow(candidate)) found.set(candidate.name, candidate)
    }
    if (found.size === 0) return yield* new WorkflowsModuleError({ path, reason: "it exports no workflow" })
    return [...found.values()]
  })

/**
 * The golden cases of files and folders (every `*.json` of a folder, in name order), each with its path.
 *
 * @category loading
 * @since 0.1.0
 */
export const readCases = (paths: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<Evaluation.Case>, CaseFileError | Evaluation.GoldenCaseError> =>
  Effect.gen(function*() {
    const files: Array<string> = []
    for (const path of paths) {
      const info = yield* Effect.tryPromise({ try: () => stat(path), catch: (e) => new CaseFileError({ path, reason: `cannot be read (${(e as Error).message})` }) })
      if (!info.isDirectory()) {
        files.push(path)
        continue
      }
      const names = yield* Effect.tryPromise({ try: () => readdir(path), catch: (e) => new CaseFileError({ path, reason: `cannot be listed (${(e as Error).message})` }) })
      files.push(...names.filter((n) => n.endsWith(".json")).sort().map((n) => join(path, n)))
    }
    if (files.length === 0) return yield* new CaseFileError({ path: paths.join(" "), reason: "holds no case file (*.json)" })
    return yield* Effect.forEach(files, (file) =>
      Effect.tryPromise({ try: () => readFile(file, "utf8"), catch: (e) => new CaseFileError({ path: file, reason: `cannot be read (${(e as Error).message})` }) }).pipe(
        Effect.flatMap((text) => Evaluation.decodeCase(text, file))
      ))
  })

/**
 * Writes a case to `path` as its golden file.
 *
 * @category loading
 * @since 0.1.0
 */
export const writeCase = (path: string, c: Evaluation.Case): Effect.Effect<void, CaseFileError> =>
  Effect.tryPromise({ try: () => writeFile(path, Evaluation.encodeCase(c)), catch: (e) => new CaseFileError({ path, reason: `cannot be written (${(e as Error).message})` }) })

/**
 * The workflow of a case's name among those loaded.
 *
 * @category loading
 * @since 0.1.0
 */
export const workflowFor = (workflows: ReadonlyArray<AnyWorkflow>, c: Evaluation.Case, path: string) => {
  const workflow = workflows.find((w) => w.name === c.workflowName)
  return workflow === undefined
    ? Effect.fail(new WorkflowsModuleError({ path, reason: `it exports no workflow named ${c.workflowName} (it exports ${workflows.map((w) => w.name).join(", ")})` }))
    : Effect.succeed(workflow)
}

/**
 * A result as a few lines: PASS or FAIL, the name, the counts, then the diff.
 *
 * @category output
 * @since 0.1.0
 */
export const resultText = (r: Evaluation.Report["results"][number]): string =>
  [
    `${r.passed ? "PASS" : "FAIL"} ${r.name} (${r.workflowName}): ${r.answered} recorded answer(s) used, ${r.unused} unused, ${r.calledForReal} model call(s) made for real`,
    ...(r.error === undefined ? [] : [`  ${r.error}`]),
    ...r.diff.map((line) => `  ${line}`)
  ].join("\n")
