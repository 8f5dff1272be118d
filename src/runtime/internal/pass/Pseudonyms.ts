/**
 * Per-execution pseudonyms: a secret key made once per root execution, kept
 * with its tree (the reserved tree key `@baton/pseudonym-key`, deleted with
 * the tree's keys), never logged. A step turns a personal value into a
 * token with `ctx.pseudonymize(value)` and back with `ctx.reidentify(token)`:
 * the same value gives the same token on every instance that continues the
 * execution (deterministic authenticated encryption: AES-256-GCM with a
 * synthetic IV = HMAC of the value), and a token of one execution does not
 * decode in another (its key differs; the GCM tag refuses it).
 *
 * The key is made on first use: only executions whose steps pseudonymize
 * have one. Of two instances making it at once, the tree store keeps one.
 * Children use their root's key (it is kept with the tree).
 *
 * With the application option `pseudonymKey`, no key is made: each tenant's
 * key is derived from the application's, so a value gives one token in
 * every execution of its tenant.
 *
 * @since 0.1.0
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto"
import { Effect, Option } from "effect"
import { PseudonymError } from "../../Errors.ts"
import { reservedPrefix, type TreeStoreShape } from "../../../stores/TreeStore.ts"

/**
 * The reserved name (under `@baton/`) of the tree's pseudonym key.
 *
 * @category constants
 * @since 0.1.0
 */
export const keyName = "pseudonym-key"

const tokenPrefix = "pn1_"

/**
 * The tree's key: the kept one, or a new one saved if absent (then read back: exactly one is kept).
 *
 * @category internal
 * @since 0.1.0
 */
export const keyOf = (tree: TreeStoreShape, tenantId: string, rootExecutionId: string) =>
  Effect.gen(function*() {
    const read = tree.get(tenantId, rootExecutionId, reservedPrefix + keyName)
    let kept = yield* read
    if (Option.isNone(kept)) {
      yield* tree.saveReservedIfAbsent(tenantId, rootExecutionId, keyName, randomBytes(32).toString("base64"))
      kept = yield* read
    }
    if (Option.isNone(kept) || typeof kept.value !== "string") {
      return yield* Effect.die(new Error(`the pseudonym key of execution ${rootExecutionId} is missing after it was saved`))
    }
    return Buffer.from(kept.value, "base64")
  })

const subkey = (key: Uint8Array, use: string) => createHmac("sha256", key).update(use).digest()

/**
 * A tenant's key under the application's pseudonym key (base64): the same
 * on every instance, another for every tenant, so a token of one tenant
 * never reads in another.
 *
 * @category internal
 * @since 0.1.0
 */
export const tenantKey = (applicationKey: string, tenantId: string): Uint8Array =>
  subkey(Buffer.from(applicationKey, "base64"), `tenant:${tenantId}`)

/**
 * The value's token under `key`: the same for the same value and key.
 *
 * @category internal
 * @since 0.1.0
 */
export const pseudonymize = (key: Uint8Array, value: string): string => {
  const iv = createHmac("sha256", subkey(key, "iv")).update(value, "utf8").digest().subarray(0, 12)
  const cipher = createCipheriv("aes-256-gcm", subkey(key, "enc"), iv)
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()])
  return tokenPrefix + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")
}

/**
 * The value a token of `key` stands for; `PseudonymError` when the token is not one of this key's.
 *
 * @category internal
 * @since 0.1.0
 */
export const reidentify = (key: Uint8Array, token: string, executionId: string): string => {
  if (typeof token !== "string" || !token.startsWith(tokenPrefix)) {
    throw new PseudonymError({ executionId, reason: "it is not a pseudonym token" })
  }
  const raw = Buffer.from(token.slice(tokenPrefix.length), "base64url")
  if (raw.length < 28) throw new PseudonymError({ executionId, reason: "the token is truncated" })
  const iv = raw.subarray(0, 12)
  try {
    const decipher = createDecipheriv("aes-256-gcm", subkey(key, "enc"), iv)
    decipher.setAuthTag(raw.subarray(12, 28))
    const value = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
    // A token is only ever the one its value gives: anything else was altered.
    if (pseudonymize(key, value) !== token) throw new Error("altered")
    return value
  } catch {
    throw new PseudonymError({ executionId, reason: "it was made by another execution, or altered" })
  }
}
