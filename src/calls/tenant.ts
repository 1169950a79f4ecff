import { hash } from 'node:crypto'

/**
 * The tenant an API key belongs to, as stored: a SHA-256 of the key. Raw keys are never written to the
 * database or the logs; two keys of the same workspace are two tenants here, which only costs cache hits.
 * Computed on every proxied request: the one-shot `hash` skips the Hash object `createHash` builds.
 */
export function tenantOf(apiKey: string): string {
  return hash('sha256', apiKey, 'hex').slice(0, 40)
}
