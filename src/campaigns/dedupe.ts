/**
 * Duplicate detection on the E.164 form, so `09876543210` and `+91 98765-43210` are one contact.
 * Remembers the row that came first so a duplicate's reject can point at it.
 */
export interface Deduper {
  /** The first row seen with this number, or undefined (and the number is remembered with `row`). */
  firstSeen(e164: string, row: number): number | undefined
  readonly size: number
}

/** Remembers the first row of each key (an E.164 number), to report later rows as duplicates of it. */
export function createDeduper(): Deduper {
  const seen = new Map<string, number>()
  return {
    firstSeen(e164, row) {
      const first = seen.get(e164)
      if (first === undefined) seen.set(e164, row)
      return first
    },
    get size() {
      return seen.size
    },
  }
}

/** Keeps the first row per key; returns the kept rows and the dropped ones with the row they repeat. */
export function dedupeBy<T>(items: Iterable<T>, key: (item: T) => string): { kept: T[]; duplicates: Array<{ item: T; of: T }> } {
  const first = new Map<string, T>()
  const kept: T[] = []
  const duplicates: Array<{ item: T; of: T }> = []
  for (const item of items) {
    const k = key(item)
    const prior = first.get(k)
    if (prior === undefined) {
      first.set(k, item)
      kept.push(item)
    } else duplicates.push({ item, of: prior })
  }
  return { kept, duplicates }
}
