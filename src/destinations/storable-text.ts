/**
 * Text as every supported database stores it. Postgres refuses U+0000 in a text column ("invalid byte sequence for
 * encoding UTF8: 0x00"), and with it the whole transaction: a sink answering with a binary body (gzip starts
 * 1f 8b 00) once made every outcome committed with its attempt be lost. U+0000 becomes U+FFFD, the character that
 * bytes which are not UTF-8 already decode to, so the text stays readable. Nothing else needs replacing: a JS string
 * is written as valid UTF-8 (a lone surrogate as U+FFFD), and U+0000 is the one valid character Postgres refuses.
 */
export function storableText(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text
}

/** `storableText` of a nullable column's value. */
export function storableOrNull(text: string | null): string | null {
  return text === null ? null : storableText(text)
}
