import { fromJsonOrNull } from '../db/json.ts'

/**
 * A calls-ledger row's `parameters` — the request's JSON list of `{ name, value }` — as a record by name; entries that
 * are not a name and a text value are left out, and text that does not parse gives `{}`.
 */
export function ledgerParameters(text: string | null): Record<string, string> {
  const out: Record<string, string> = {}
  const stored = fromJsonOrNull<unknown>(text)
  if (!Array.isArray(stored)) return out
  for (const p of stored as Array<{ name?: unknown; value?: unknown } | null>) {
    if (typeof p?.name === 'string' && typeof p.value === 'string') out[p.name] = p.value
  }
  return out
}
