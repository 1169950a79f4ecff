/** One element of an If-None-Match list: an entity-tag, weak or strong (RFC 9110 §8.8.3), with the blanks and commas around it. */
const ENTITY_TAG = /[\s,]*((?:W\/)?"[^"]*")[\s,]*/y

/**
 * Whether an If-None-Match value matches a representation's ETag (RFC 9110 §13.1.2): `*` matches any current
 * representation; otherwise any entity-tag of the list does by weak comparison — `W/` ignored on either side, the
 * quoted tags equal. A tag may hold a comma inside its quotes, so the list is read tag by tag, not split at commas.
 * A value that is not such a list matches nothing (the condition is ignored); a representation without an ETag
 * matches only `*`.
 */
export function ifNoneMatchMatches(header: string | null, etag: string | undefined): boolean {
  if (header === null) return false
  if (header.trim() === '*') return true
  if (etag === undefined) return false
  const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag)
  const own = opaque(etag.trim())
  const tags: string[] = []
  ENTITY_TAG.lastIndex = 0
  while (ENTITY_TAG.lastIndex < header.length) {
    const match = ENTITY_TAG.exec(header)
    if (!match) return false
    tags.push(match[1]!)
  }
  return tags.some((tag) => opaque(tag) === own)
}
