import type { ReportRow } from './day-rows.ts'
import { createFiguresAccumulator, type Figures, type FiguresAccumulator } from './figures.ts'

/** Figures per key (agent, campaign), fed row by row alongside the totals. */
export interface GroupedFigures<K> {
  add(key: K, row: ReportRow, results: Array<[string, string]>): void
  /** Groups, most calls first. */
  finish(): Array<{ key: K; figures: Figures }>
}

export function createGroupedFigures<K>(): GroupedFigures<K> {
  const groups = new Map<K, FiguresAccumulator>()
  return {
    add(key, row, results) {
      let acc = groups.get(key)
      if (!acc) groups.set(key, (acc = createFiguresAccumulator()))
      acc.add(row, results)
    },
    finish() {
      return [...groups]
        .map(([key, acc]) => ({ key, figures: acc.finish() }))
        .sort((a, b) => b.figures.calls - a.figures.calls || String(a.key).localeCompare(String(b.key)))
    },
  }
}
