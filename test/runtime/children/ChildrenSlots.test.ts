/**
 * Step slots and children: a parent's continuation after its children ended
 * goes first among waiters (it closes that branch), and a step waiting for
 * its children inside it (placement "parent") gives its slot away meanwhile.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect } from "effect"
import * as StepSlots from "../../../src/runtime/internal/limits/StepSlots.ts"
import type { InstanceShape } from "../../../src/runtime/internal/Instance.ts"

const State = Annotation.Root({ x: Annotation<number>() })
const graph = new StateGraph(State).addNode("a", () => ({})).addNode("b", () => ({})).addEdge(START, "a").addEdge("a", "b").addEdge("b", END)

const instanceWith = (slots: StepSlots.StepSlotsShape) => ({ services: Context.make(StepSlots.StepSlots, slots) }) as unknown as InstanceShape

const gate = (instance: InstanceShape, depth: number, continuation?: { value: boolean }) =>
  StepSlots.passGate(instance, { graph, depth, newRoot: false, continuation, signal: new AbortController().signal, park: () => {} })!

/** Turns of the event loop until `done` holds. */
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setImmediate(r))
  assert.isTrue(done(), "did not get there")
}

describe("step slots and children", () => {
  it.effect("a parent's continuation (its children ended) goes before deeper steps that waited longer", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const instance = instanceWith(slots)
      const order: Array<string> = []
      yield* Effect.promise(async () => {
        let free!: () => void
        const holder = gate(instance, 1)("a", () => new Promise<void>((r) => (free = r)))
        await until(() => slots.busy === 1)
        const deep = gate(instance, 5)("a", async () => void order.push("deep step"))
        await until(() => slots.waiting === 1)
        const continuing = gate(instance, 1, { value: true })("a", async () => void order.push("parent's continuation"))
        await until(() => slots.waiting === 2)
        free()
        await Promise.all([holder, deep, continuing])
      })
      assert.deepStrictEqual(order, ["parent's continuation", "deep step"])
    }))

  it.effect("without the continuation mark the same step waits its turn (the deeper one first)", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const instance = instanceWith(slots)
      const order: Array<string> = []
      yield* Effect.promise(async () => {
        let free!: () => void
        const holder = gate(instance, 1)("a", () => new Promise<void>((r) => (free = r)))
        await until(() => slots.busy === 1)
        const deep = gate(instance, 5)("a", async () => void order.push("deep step"))
        await until(() => slots.waiting === 1)
        const plain = gate(instance, 1, { value: false })("a", async () => void order.push("plain step"))
        await until(() => slots.waiting === 2)
        free()
        await Promise.all([holder, deep, plain])
      })
      assert.deepStrictEqual(order, ["deep step", "plain step"])
    }))

  it.effect("a step waiting for its children gives its slot to them, and takes one again before deeper waiters", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const instance = instanceWith(slots)
      const order: Array<string> = []
      yield* Effect.promise(async () => {
        const parentGate = gate(instance, 1)
        let other: Promise<void> | undefined
        let deep: Promise<void> | undefined
        let releaseOther!: () => void
        const parent = parentGate("a", async () => {
          order.push("parent starts")
          await StepSlots.yieldSlot(async () => {
            // the child needs the only slot: it gets it because the parent gave it away
            await gate(instance, 2)("a", async () => {
              order.push("child runs")
              // a step of another tree arrives while the child holds the slot: it is first in line
              other = gate(instance, 1)("b", async () => {
                order.push("other tree's step")
                await new Promise<void>((r) => (releaseOther = r))
              })
              await until(() => slots.waiting === 1)
            })
          })
          order.push("parent continues")
        })
        // the parent asks again while the other tree's step holds the slot; then a deeper step arrives
        await until(() => order.includes("other tree's step") && slots.waiting === 1)
        deep = gate(instance, 9)("b", async () => void order.push("deeper step"))
        await until(() => slots.waiting === 2)
        releaseOther()
        await Promise.all([parent, other, deep])
      })
      assert.deepStrictEqual(order, ["parent starts", "child runs", "other tree's step", "parent continues", "deeper step"])
      assert.strictEqual(slots.busy, 0, "every slot given back")
    }))
})
