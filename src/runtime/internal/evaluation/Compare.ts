/**
 * How a replay's end compares with its case: the status, and the outputs as
 * JSON (the recorded one decoded by the workflow's output schema first),
 * with a readable diff by JSON path.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { EndStatus } from "../../../stores/ExecutionHistoryStore.ts"
import * as Workflow from "../../Workflow.ts"
import { jsonForm, type ReplaySourceShape } from "./ModelCalls.ts"

/**
 * What a case holds that the comparison reads (see `Evaluation.Case`).
 *
 * @category models
 * @since 0.1.0
 */
export interface CaseLike {
  readonly name: string
  readonly workflowName: string
  readonly answers: ReadonlyArray<{ readonly unrecordable?: string | undefined }>
  readonly expected: {
    readonly status: EndStatus
    readonly output?: unknown
    readonly error: string | null
  }
}

/**
 * Compares an expected output with a replay's (both JSON, the recorded one
 * decoded by the workflow's output schema); true when they match.
 *
 * @category models
 * @since 0.1.0
 */
export type Comparator = (expected: unknown, actual: unknown) => boolean

/**
 * What a replay ended with, and how it compares with the record.
 *
 * @category models
 * @since 0.1.0
 */
export interface Result {
  readonly name: string
  readonly workflowName: string
  /** The replay ended as recorded, with a matching output. */
  readonly passed: boolean
  readonly expected: CaseLike["expected"]
  readonly actual: {
    readonly status: EndStatus | "Paused"
    /** The replay's output (decoded by the workflow's output schema), when it finished. */
    readonly output?: unknown
    readonly error: string | null
  }
  /** Where the outputs differ, one line each (`$.path: expected …, got …`); empty when they match. */
  readonly diff: ReadonlyArray<string>
  /** Recorded answers the replay used. */
  readonly answered: number
  /** Recorded answers the replay never asked for (a changed workflow that asks less). */
  readonly unused: number
  /** Model calls made for real (`onUnrecorded: "call"`). */
  readonly calledForReal: number
}

/**
 * How a replay ended.
 *
 * @category models
 * @since 0.1.0
 */
export interface Ended {
  readonly status: EndStatus | "Paused"
  readonly output?: unknown
  readonly error: string | null
}

const show = (value: unknown) => {
  const text = JSON.stringify(value)
  if (text === undefined) return "nothing"
  return text.length > 200 ? `${text.slice(0, 199)}…` : text
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
const keyPath = (path: string, key: string) => /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`

/**
 * Where two JSON values differ, one line per difference.
 *
 * @category utils
 * @since 0.1.0
 */
export const diff = (expected: unknown, actual: unknown, path = "$"): ReadonlyArray<string> => {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const lines: Array<string> = []
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      if (i >= actual.length) lines.push(`${path}[${i}]: expected ${show(expected[i])}, got nothing (the array is shorter)`)
      else if (i >= expected.length) lines.push(`${path}[${i}]: expected nothing (the array is longer), got ${show(actual[i])}`)
      else lines.push(...diff(expected[i], actual[i], `${path}[${i}]`))
    }
    return lines
  }
  if (isObject(expected) && isObject(actual)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort()
    return keys.flatMap((k) =>
      !(k in actual) ? [`${keyPath(path, k)}: expected ${show(expected[k])}, got nothing`]
      : !(k in expected) ? [`${keyPath(path, k)}: expected nothing, got ${show(actual[k])}`]
      : diff(expected[k], actual[k], keyPath(path, k)))
  }
  return JSON.stringify(expected) === JSON.stringify(actual) ? [] : [`${path}: expected ${show(expected)}, got ${show(actual)}`]
}

const counts = (c: CaseLike, source: ReplaySourceShape) => ({
  answered: source.used.answered,
  unused: Math.max(0, c.answers.filter((a) => a.unrecordable === undefined).length - source.used.answered),
  calledForReal: source.used.calledForReal
})

/**
 * The result of a replay that ran to its end.
 *
 * @category constructors
 * @since 0.1.0
 */
export const result = (c: CaseLike, workflow: Workflow.AnyWorkflow, ended: Ended, source: ReplaySourceShape, compare: Comparator | undefined) =>
  Effect.gen(function*() {
    const base = { name: c.name, workflowName: c.workflowName, expected: c.expected, actual: ended, ...counts(c, source) }
    if (ended.status !== c.expected.status) {
      const why = [`status: expected ${c.expected.status}, got ${ended.status}${ended.error === null ? "" : ` (${ended.error})`}`]
      return { ...base, passed: false, diff: why } satisfies Result as Result
    }
    if (ended.status !== "Finished") return { ...base, passed: true, diff: [] } satisfies Result as Result
    // The recorded output is the graph's state: decoded by the (current) output schema, as the replay's is.
    const expected = yield* Workflow.decode(workflow, "output", c.expected.output, "Evaluation.run").pipe(
      Effect.map((decoded) => ({ _tag: "Decoded" as const, decoded })),
      Effect.catch((e) => Effect.succeed({ _tag: "Refused" as const, reason: e.message }))
    )
    if (expected._tag === "Refused") {
      return { ...base, passed: false, diff: [`$: the recorded output does not decode by the workflow's output schema: ${expected.reason}`] } satisfies Result as Result
    }
    const want = jsonForm(expected.decoded)
    const got = jsonForm(ended.output)
    const wantValue = want._tag === "Json" ? want.value : null
    const gotValue = got._tag === "Json" ? got.value : null
    const lines = diff(wantValue, gotValue)
    const passed = compare === undefined ? lines.length === 0 : compare(wantValue, gotValue)
    return { ...base, actual: { ...ended, output: gotValue }, passed, diff: passed ? [] : lines.length > 0 ? lines : ["$: the comparator found the outputs different"] } satisfies Result as Result
  })

/**
 * The result of a case whose replay could not run to its end.
 *
 * @category constructors
 * @since 0.1.0
 */
export const unrun = (c: CaseLike, error: string): Result & { readonly error: string } => ({
  name: c.name,
  workflowName: c.workflowName,
  passed: false,
  expected: c.expected,
  actual: { status: "Failed", error },
  diff: [],
  answered: 0,
  unused: 0,
  calledForReal: 0,
  error
})
