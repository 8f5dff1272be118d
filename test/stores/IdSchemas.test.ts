/**
 * The id schemas are the one rule for every key a store keeps: a seeded run
 * of awkward strings (empty, NUL, lone and paired surrogates, U+FFFD, lengths
 * around the limit) goes through `Schema.is(Id)`, through a store contract's
 * `make` (the memory LeaseStore, the check every backend shares) and through
 * the public API (`Baton.status`), and all three agree, with the contract's
 * refusal naming the field and giving the schema's own reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import { Ids, LeaseStore } from "../../src/index.ts"

/** A small seeded generator (mulberry32), so a failure names a reproducible case. */
const random = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const pieces = ["a", "Z", "0", "_", "\u0000", "\uD800", "\uDC00", "\uD83D\uDE00", "\uFFFD", "é", " "]

const cases = (seed: number, count: number): Array<string> => {
  const next = random(seed)
  const out = ["", "x".repeat(Ids.maxIdLength), "x".repeat(Ids.maxIdLength + 1), "\uD83D\uDE00".repeat(Ids.maxIdLength / 2)]
  for (let i = 0; i < count; i++) {
    const long = next() < 0.15
    const length = long ? Ids.maxIdLength - 3 + Math.floor(next() * 6) : Math.floor(next() * 8)
    let s = ""
    while (s.length < length) s += next() < 0.8 ? "a" : pieces[Math.floor(next() * pieces.length)]
    out.push(s)
  }
  return out
}

const reasonOf = (value: string): string => {
  const exit = Schema.decodeUnknownExit(Ids.Id)(value)
  assert.strictEqual(exit._tag, "Failure", `${JSON.stringify(value)} is refused by the schema`)
  return String(exit)
}

describe("id schemas", () => {
  it("Text allows the empty string, Id does not; both refuse NUL, lone surrogates and more than maxIdLength characters", () => {
    assert.isTrue(Schema.is(Ids.Text)(""))
    assert.isFalse(Schema.is(Ids.Id)(""))
    for (const bad of ["a\u0000", "x\uD800y", "\uDC00", "x".repeat(Ids.maxIdLength + 1)]) {
      assert.isFalse(Schema.is(Ids.Text)(bad), JSON.stringify(bad))
      assert.isFalse(Schema.is(Ids.Id)(bad), JSON.stringify(bad))
    }
    for (const good of ["t", "\uD83D\uDE00", "\uFFFD", "x".repeat(Ids.maxIdLength)]) assert.isTrue(Schema.is(Ids.Id)(good), JSON.stringify(good))
    // the named ids are the same rule
    assert.isTrue(Schema.is(Ids.TenantIdSchema)("acme"))
    assert.isFalse(Schema.is(Ids.ThreadIdSchema)("a\u0000"))
  })

  it.effect("a store contract and the public API agree with Schema.is(Id) on 400 seeded strings, naming the field and the schema's reason", () =>
    Effect.gen(function*() {
      const leases = yield* LeaseStore.LeaseStore
      const baton = yield* Baton.Baton
      for (const value of cases(20261202, 400)) {
        const valid = Schema.is(Ids.Id)(value)
        const stored = yield* Effect.result(leases.get(value, "root_1"))
        const read = yield* Effect.result(baton.status("exec_1", { tenantId: value }))
        if (valid) {
          assert.strictEqual(stored._tag, "Success", `${JSON.stringify(value)} is kept by the contract`)
          assert.isTrue(stored._tag === "Success" && Option.isNone(stored.success))
          assert.isFalse(read._tag === "Failure" && read.failure._tag === "InvalidInputError", `${JSON.stringify(value)} passes the API`)
          continue
        }
        assert.strictEqual(stored._tag, "Failure", `${JSON.stringify(value)} is refused by the contract`)
        if (stored._tag !== "Failure") continue
        assert.strictEqual(stored.failure._tag, "InvalidInputError")
        const error = stored.failure as { readonly field: string; readonly reason: string }
        assert.strictEqual(error.field, "tenantId")
        const schemaText = reasonOf(value)
        assert.isTrue(schemaText.includes(error.reason), `the contract gives the schema's reason for ${JSON.stringify(value)}: ${error.reason}`)
        assert.strictEqual(read._tag, "Failure", `${JSON.stringify(value)} is refused by the API`)
        assert.strictEqual(read._tag === "Failure" ? read.failure._tag : "", "InvalidInputError")
      }
    }).pipe(Effect.provide(Baton.layer({ workflows: [] }).pipe(Layer.provideMerge(MemoryStores.layer)))))
})
