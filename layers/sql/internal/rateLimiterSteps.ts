/**
 * The state transitions of effect's `RateLimiterStore` (token bucket and
 * adaptive learning), as pure functions of (state, options, now) so a SQL
 * store can run them under a row lock. They follow effect 4.1's
 * `RateLimiter.layerStoreMemory` step for step: the shared suite holds the
 * SQL stores to that store's answers.
 */
import { Duration } from "effect"
import type { AdaptiveConsumeOptions, AdaptiveConsumeResult, AdaptiveFeedbackOptions, AdaptivePhase } from "effect/persistence/RateLimiter"
import type { Step } from "./lockedState.ts"

/** effect's own constants (private in `RateLimiter.ts`). */
const ttlGraceMillis = 60_000
const maxWindowMillis = 60 * 60 * 1_000

const clampMillis = (millis: number): number => Number.isNaN(millis) || millis <= 0 ? 1 : Math.min(millis, maxWindowMillis)

export interface Bucket {
  readonly tokens: number
  readonly lastRefill: number
}

export interface TokenBucketOptions {
  readonly tokens: number
  readonly limit: number
  readonly refillRate: Duration.Duration
  readonly allowOverflow: boolean
}

export const tokenBucket = (
  bucket: Bucket | undefined,
  options: TokenBucketOptions,
  now: number
): Step<Bucket, readonly [remaining: number, elapsedMillis: number]> => {
  const refillMillis = Duration.toMillis(options.refillRate)
  let tokens = bucket?.tokens ?? options.limit
  let lastRefill = bucket?.lastRefill ?? now
  const toAdd = Math.floor((now - lastRefill) / refillMillis)
  if (toAdd > 0) {
    tokens = Math.min(options.limit, tokens + toAdd)
    lastRefill += toAdd * refillMillis
  }
  if (tokens >= options.limit) lastRefill = now
  const next = tokens - options.tokens
  if (options.allowOverflow || next >= 0) tokens = next
  return { next: { tokens, lastRefill }, result: [next, Math.max(0, now - lastRefill)] }
}

export interface Adaptive {
  readonly phase: AdaptivePhase
  readonly epoch: number
  readonly cooldownUntil: number
  readonly learningStartedAt: number
  readonly observedTokens: number
  readonly learnedLimit: number
  readonly learnedWindowMillis: number
  readonly expiresAt: number
}

/** Serialisable form of `AdaptiveConsumeResult` (the delay in milliseconds). */
export interface AdaptiveConsumed {
  readonly delayMillis: number
  readonly epoch: number
  readonly phase: AdaptivePhase
}

export const toConsumeResult = (r: AdaptiveConsumed): AdaptiveConsumeResult => ({
  delay: r.delayMillis <= 0 ? Duration.zero : Duration.millis(r.delayMillis),
  epoch: r.epoch,
  phase: r.phase
})

const live = (state: Adaptive | undefined, now: number): Adaptive | undefined =>
  state !== undefined && state.expiresAt > now ? state : undefined

const cooldown = (epoch: number, cooldownUntil: number): Adaptive => ({
  phase: "cooldown",
  epoch,
  cooldownUntil,
  learningStartedAt: 0,
  observedTokens: 0,
  learnedLimit: 0,
  learnedWindowMillis: 0,
  expiresAt: cooldownUntil + ttlGraceMillis
})

export const adaptiveConsume = (
  stored: Adaptive | undefined,
  options: AdaptiveConsumeOptions,
  now: number
): Step<Adaptive, AdaptiveConsumed> => {
  const state = live(stored, now)
  if (state === undefined) {
    return { next: stored === undefined ? undefined : null, result: { delayMillis: 0, epoch: 0, phase: "inactive" } }
  }
  switch (state.phase) {
    case "cooldown": {
      if (state.cooldownUntil > now) {
        return { result: { delayMillis: state.cooldownUntil - now, epoch: state.epoch, phase: "cooldown" } }
      }
      const epoch = state.epoch + 1
      return {
        next: {
          ...state,
          phase: "learning",
          epoch,
          learningStartedAt: now,
          observedTokens: options.tokens,
          expiresAt: now + Duration.toMillis(options.fallbackWindow) + ttlGraceMillis
        },
        result: { delayMillis: 0, epoch, phase: "learning" }
      }
    }
    case "learning":
      return {
        next: { ...state, observedTokens: state.observedTokens + options.tokens },
        result: { delayMillis: 0, epoch: state.epoch, phase: "learning" }
      }
    case "learned": {
      const refillMillis = state.learnedWindowMillis / state.learnedLimit
      const reset = state.cooldownUntil <= now
      const observedTokens = (reset ? 0 : state.observedTokens) + options.tokens
      const cooldownUntil = (reset ? now : state.cooldownUntil) + refillMillis * options.tokens
      const ttl = cooldownUntil - now
      const elapsed = observedTokens * refillMillis - ttl
      const windowNumber = Math.floor((observedTokens - 1) / state.learnedLimit)
      const remaining = windowNumber * state.learnedWindowMillis - elapsed
      return {
        next: { ...state, observedTokens, cooldownUntil },
        result: { delayMillis: remaining <= 0 ? 0 : remaining, epoch: state.epoch, phase: "learned" }
      }
    }
    default:
      return { result: { delayMillis: 0, epoch: state.epoch, phase: state.phase } }
  }
}

export const adaptiveFeedback = (
  stored: Adaptive | undefined,
  options: AdaptiveFeedbackOptions,
  now: number
): Step<Adaptive, void> => {
  if (options.status !== 429 || options.retryAfter === undefined) return { result: undefined }
  const retryAfterMillis = clampMillis(Duration.toMillis(options.retryAfter))
  const cooldownUntil = now + retryAfterMillis
  const state = live(stored, now)
  if (state === undefined) {
    if (options.epoch !== 0) return { next: stored === undefined ? undefined : null, result: undefined }
    return { next: cooldown(0, cooldownUntil), result: undefined }
  }
  if (state.epoch !== options.epoch) return { result: undefined }
  switch (state.phase) {
    case "cooldown": {
      const until = Math.max(state.cooldownUntil, cooldownUntil)
      return { next: { ...state, cooldownUntil: until, expiresAt: until + ttlGraceMillis }, result: undefined }
    }
    case "learning": {
      const accepted = state.observedTokens - options.tokens
      if (accepted <= 0) return { next: cooldown(state.epoch, cooldownUntil), result: undefined }
      const learnedWindowMillis = clampMillis(now - state.learningStartedAt + retryAfterMillis)
      return {
        next: {
          ...state,
          phase: "learned",
          epoch: state.epoch + 1,
          cooldownUntil: state.learningStartedAt + learnedWindowMillis,
          observedTokens: accepted,
          learnedLimit: accepted,
          learnedWindowMillis,
          expiresAt: now + learnedWindowMillis + ttlGraceMillis
        },
        result: undefined
      }
    }
    case "learned":
      return { next: cooldown(state.epoch, cooldownUntil), result: undefined }
    default:
      return { result: undefined }
  }
}
