/**
 * Text as every supported database stores it. Postgres refuses U+0000 in a text parameter ("invalid byte sequence for
 * encoding UTF8: 0x00"), and with it the whole statement and transaction: a sink answering with a binary body (gzip
 * starts 1f 8b 00) once made every outcome committed with its attempt be lost, and a recipe error quoting a UTF-16 file
 * read as UTF-8 left its run unrecorded. U+0000 becomes U+FFFD, the character that bytes which are not UTF-8 already
 * decode to, so the text stays readable. Nothing else needs replacing: a JS string is written as valid UTF-8 (a lone
 * surrogate as U+FFFD), and U+0000 is the one valid character Postgres refuses. Every Postgres statement's parameters
 * pass through it (src/db/connect.ts); the deliveries' texts are made storable on SQLite too.
 */
export function storableText(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text
}

/** `storableText` of a nullable column's value. */
export function storableOrNull(text: string | null): string | null {
  return text === null ? null : storableText(text)
}

/** A statement's parameters with each string `storableText`: the same array when none holds U+0000. */
export function storableParameters(values: unknown[]): unknown[] {
  let out: unknown[] | undefined
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (typeof value === 'string' && value.includes('\0')) (out ??= [...values])[i] = storableText(value)
  }
  return out ?? values
}
