/** The workflows `baton replay` / `baton eval` load in test/ops/CliEvaluation.test.ts: the recorded code. */
import { makeModel, summarize } from "../runtime/evaluation/fixtures.ts"

export const workflows = [summarize(makeModel())]
