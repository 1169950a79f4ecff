import { createHash } from 'node:crypto'

/** The longest path-and-query a cache key holds as it is; a longer one is hashed. */
const LONGEST_PLAIN = 512

/**
 * The JSON cache's key of a tenant's answer: `<tenant>:<path>?<canonical query>`, the path and query hashed
 * (SHA-256) past LONGEST_PLAIN characters. The key is the table's key, and Postgres refuses an index entry past
 * ~2,700 bytes: a GET with a query of kilobytes was never cached there, and each one logged a failed cache write.
 * Keys are compared whole (the tenant stays first and plain: the in-flight requests of a tenant are forgotten by it).
 */
export function cacheKey(tenant: string, pathAndQuery: string): string {
  if (pathAndQuery.length <= LONGEST_PLAIN) return `${tenant}:${pathAndQuery}`
  return `${tenant}:sha256:${createHash('sha256').update(pathAndQuery).digest('base64url')}`
}
