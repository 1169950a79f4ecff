/** Consecutive slices of at most `size` items: for IN lists and batches that must stay bounded. */
export function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  if (!(size >= 1)) throw new RangeError(`chunk size must be at least 1, got ${size}`)
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size)
}
