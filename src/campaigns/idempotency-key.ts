import { hash } from 'node:crypto'

/**
 * A deterministic idempotency key: the same parts always give the same key, so planning the same
 * follow-up twice (a re-run, a replayed event, two replicas) sends the same key and the ledger or the
 * provider refuses the second call. UUID-shaped (version 5 bits, RFC 4122 variant) as the spec recommends.
 */
export function deterministicKey(...parts: Array<string | number>): string {
  // One-shot: a Hash object per key was a tenth of planning 100,000 follow-ups.
  const hex = hash('sha256', parts.join('\u001f'), 'hex')
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** The key of the `attempt`-th call (1 = the original) to a contact in a campaign. */
export function followUpKey(campaign: string, phone: string, attempt: number): string {
  return deterministicKey('switchboard.follow-up', campaign, phone, attempt)
}
