import { printable } from './printable.ts'

/**
 * Edit distance with adjacent transpositions (optimal string alignment), so the common slips — a swapped
 * pair (`PROT`), a missing or extra letter (`WEBHOOK_TARGET`) — each count as one edit.
 */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/**
 * The candidate a mistyped name most likely meant, ignoring case (`port` → `PORT`), or undefined when
 * nothing is close: at most 2 edits, and fewer than a third of the name's length beyond that.
 */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  const upper = word.toUpperCase()
  let best: { name: string; d: number } | undefined
  for (const name of candidates) {
    const d = distance(upper, name.toUpperCase())
    if (!best || d < best.d) best = { name, d }
  }
  if (!best) return undefined
  return best.d <= Math.max(2, Math.floor(word.length / 3)) ? best.name : undefined
}

/**
 * `unknown key "retrySchedule" (did you mean "retryScheduleMs"?)`: how a misspelt key is named everywhere (the
 * configuration, a destination, a recipe helper's argument), the key shown escaped (it came from the user's input).
 */
export function unknownKey(key: string, candidates: readonly string[]): string {
  const guess = didYouMean(key, candidates)
  return `unknown key "${printable(key, 80)}"${guess ? ` (did you mean "${guess}"?)` : ''}`
}
