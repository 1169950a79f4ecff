import { createHash } from 'node:crypto'

/**
 * The tenant an API key belongs to, as stored: a SHA-256 of the key. Raw keys are never written to the
 * database or the logs; two keys of the same workspace are two tenants here, which only costs cache hits.
 */
export function tenantOf(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex').slice(0, 40)
}
