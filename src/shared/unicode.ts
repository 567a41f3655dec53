/**
 * Lone UTF-16 surrogates: a high surrogate not followed by a low one, or a low one not preceded
 * by a high one. They can arrive through JSON `\ud800` escapes, cannot be encoded as UTF-8, and
 * have no RFC 8785 canonical form, so they must not reach the journal.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/gu;
const HAS_SURROGATE = /[\uD800-\uDFFF]/;

/** Whether `text` is well-formed UTF-16 (String.prototype.isWellFormed, which ES2023 lacks). */
export function isWellFormed(text: string): boolean {
  // Most text has no surrogates at all: one cheap test before the exact one.
  if (!HAS_SURROGATE.test(text)) return true;
  LONE_SURROGATE.lastIndex = 0;
  return !LONE_SURROGATE.test(text);
}

/** `text` with each lone surrogate replaced by U+FFFD, as a UTF-8 encoder would. */
export function toWellFormed(text: string): string {
  if (!HAS_SURROGATE.test(text)) return text;
  return text.replace(LONE_SURROGATE, "\uFFFD");
}
