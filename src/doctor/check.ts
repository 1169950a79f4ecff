/** The outcome of one doctor check: one line for people, one object for --json. */
export interface CheckResult {
  name: string
  /** `skipped` is not a problem: the check does not apply (or cannot run until something else is up). */
  status: 'ok' | 'problem' | 'skipped'
  detail: string
  /** What to do about a problem. */
  fix?: string
}

export const ok = (name: string, detail: string): CheckResult => ({ name, status: 'ok', detail })
export const problem = (name: string, detail: string, fix: string): CheckResult => ({ name, status: 'problem', detail, fix })
export const skipped = (name: string, detail: string): CheckResult => ({ name, status: 'skipped', detail })

export function describeError(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown }
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]! : String(error)
  return typeof e?.code === 'string' && !message.includes(e.code) ? `${e.code}: ${message}` : message
}
