/** The changed code `baton replay` / `baton eval` load in test/ops/CliEvaluation.test.ts: the summary upper-cased. */
import { makeModel, summarize } from "../runtime/evaluation/fixtures.ts"

export const summarizeLoud = summarize(makeModel(), { post: (t) => t.toUpperCase() })
