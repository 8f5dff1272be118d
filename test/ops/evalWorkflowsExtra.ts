/** Changed code that asks the model once more than the record answers, for test/ops/CliEvaluation.test.ts. */
import { makeModel, summarize } from "../runtime/evaluation/fixtures.ts"

export const summarizeMore = summarize(makeModel(), { extraCall: true })
