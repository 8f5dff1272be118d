/**
 * Free text (an error message, a stack, a cause) as every store can keep it:
 * NUL and lone UTF-16 surrogates — which Postgres refuses, and which SQLite
 * and the drivers silently replace — written as `\u0000`-style escapes, and
 * the length bounded. Every store contract runs the text it writes through
 * `storableText` before its backend sees it, so a step's error can never make
 * a status write fail.
 */

/** The longest error text a record keeps (characters); longer text is cut, saying how much was cut. */
export const maxErrorTextLength = 8_192

// NUL, a high surrogate not followed by a low one, a low surrogate not preceded by a high one.
const unstorable = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** `text` with NUL and lone surrogates escaped, at most `maxLength` characters (a cut says how many were left out). */
export const storableText = (text: string, maxLength: number = maxErrorTextLength): string => {
  const escaped = text.replace(unstorable, escape)
  if (escaped.length <= maxLength) return escaped
  const note = (cut: number) => `… [${cut} more characters cut]`
  let keep = Math.max(0, maxLength - note(escaped.length).length)
  // Never split a surrogate pair.
  const last = escaped.charCodeAt(keep - 1)
  if (keep > 0 && last >= 0xd800 && last <= 0xdbff) keep--
  return escaped.slice(0, keep) + note(escaped.length - keep)
}

/** `storableText` over an optional error column (null and undefined pass through). */
export const storableError = <T extends string | null | undefined>(error: T): T =>
  (typeof error === "string" ? storableText(error) : error) as T
