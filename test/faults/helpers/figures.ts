/** The figures every fault case prints, in one line a person can compare between runs. */
export interface FaultFigures {
  sent: number
  acknowledged: number
  stored: number
  processed: number
  duplicates: number
  lost: number
  /** Seconds from the end of the fault to the first success after it; null when not applicable. */
  recoverySeconds: number | null
  extra?: Record<string, string | number>
}

export function printFigures(name: string, f: FaultFigures): void {
  const parts = [
    `sent ${f.sent}`,
    `acknowledged ${f.acknowledged}`,
    `stored ${f.stored}`,
    `processed ${f.processed}`,
    `duplicates ${f.duplicates}`,
    `lost ${f.lost}`,
    `recovery ${f.recoverySeconds === null ? 'n/a' : `${f.recoverySeconds.toFixed(2)} s`}`,
    ...Object.entries(f.extra ?? {}).map(([k, v]) => `${k} ${v}`),
  ]
  process.stdout.write(`[fault] ${name}: ${parts.join(' · ')}\n`)
}
