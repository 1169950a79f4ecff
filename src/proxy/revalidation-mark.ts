import { forbidsStale } from './cache-control.ts'
import type { CacheEntry } from './json-cache.ts'

/**
 * The private header an entry's stored headers carry when the provider's answer forbade serving it stale
 * (forbidsStale): kept with the headers so that no column, and no migration, is needed — and taken off by
 * entryHeaders before any answer is built from them, so no client ever sees it. It is never taken from the provider's
 * headers (only their Content-Type is stored), so the provider cannot set it either.
 */
export const REVALIDATE_MARK = 'x-switchboard-must-revalidate'

/** The headers to store with an entry: `stored`, marked when the provider's headers forbid serving it stale. */
export function markedHeaders(stored: Record<string, string>, provider: Headers): Record<string, string> {
  return forbidsStale(provider) ? { ...stored, [REVALIDATE_MARK]: '1' } : stored
}

/** An entry's stored headers as an answer carries them (the mark taken off), and whether it was marked. */
export function entryHeaders(entry: CacheEntry): { headers: Headers; mustRevalidate: boolean } {
  const headers = new Headers(JSON.parse(entry.headers) as Record<string, string>)
  const mustRevalidate = headers.has(REVALIDATE_MARK)
  headers.delete(REVALIDATE_MARK)
  return { headers, mustRevalidate }
}

/**
 * Whether an entry may answer STALE at `now`: not once it expired if its answer was marked (an entry stored before
 * the mark existed has none, and keeps answering STALE as it did). A fresh entry answers STALE (the caller asked the
 * provider, or its key could not be confirmed) whatever its mark: only a stale answer is what the provider forbade.
 */
export function mayServeStale(entry: CacheEntry, now: number): boolean {
  return entry.expires_at > now || !entryHeaders(entry).mustRevalidate
}
