/**
 * A workflow that asks a fake model twice around an approval pause, in
 * variants of one name: the recorded one, one that post-processes the
 * model's answer differently, one that asks an extra question.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { type Duration, Effect, Schema } from "effect"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

/** A model whose answers change with every call: a replay that called it would not match its record. */
export const makeModel = () => {
  const model = {
    calls: 0,
    ask: (prompt: string) => Effect.sync(() => ({ text: `answer ${++model.calls} to ${prompt}` }))
  }
  return model
}
export type Model = ReturnType<typeof makeModel>

export const llm: Provider.Provider = { key: "llm" }

const State = Annotation.Root({
  topic: Annotation<string>(),
  draft: Annotation<string>(),
  verdict: Annotation<string>(),
  summary: Annotation<string>()
})

export interface Variant {
  /** How the final answer becomes the summary. */
  readonly post?: ((text: string) => string) | undefined
  /** Ask one more question in the last node. */
  readonly extraCall?: boolean | undefined
  /** What the first answer is, instead of the model's (an answer JSON cannot write). */
  readonly firstAnswer?: (() => unknown) | undefined
  /** How long the first node works after its model call (on the step's Clock). */
  readonly slowWrite?: Duration.Input | undefined
}

export const summarize = (model: Model, variant: Variant = {}) =>
  Workflow.make({
    name: "summarize",
    version: "1",
    input: Schema.Struct({ topic: Schema.String }),
    graph: new StateGraph(State)
      .addNode("write", Workflow.effectStep((s: typeof State.State, ctx) =>
        Effect.map(
          Provider.guard(llm, { holder: ctx.instanceId, model: "m-1" })(variant.firstAnswer === undefined ? model.ask(`draft ${s.topic}`) : Effect.sync(variant.firstAnswer)),
          (a) => ({ draft: typeof a === "object" && a !== null && "text" in a ? String(a.text) : String(a) })
        ).pipe(Effect.tap(() => variant.slowWrite === undefined ? Effect.void : Effect.sleep(variant.slowWrite)))))
      .addNode("approve", Workflow.step(async (s: typeof State.State) => {
        const verdict = interrupt({ question: `publish ${s.draft}?` }) as string
        return { verdict }
      }))
      .addNode("finish", Workflow.effectStep((s: typeof State.State, ctx) =>
        Effect.gen(function*() {
          const guarded = Provider.guard(llm, { holder: ctx.instanceId, model: "m-1" })
          const final = yield* guarded(model.ask(`finish ${s.draft} (${s.verdict})`))
          const extra = variant.extraCall ? yield* guarded(model.ask("one more")) : undefined
          const post = variant.post ?? ((t: string) => t)
          return { summary: post(final.text) + (extra === undefined ? "" : ` / ${extra.text}`) }
        })))
      .addEdge(START, "write")
      .addEdge("write", "approve")
      .addEdge("approve", "finish")
      .addEdge("finish", END)
  })
