import { escapeHtml, showUnshown } from '../reports/html-escape.ts'

/**
 * HTML built from template literals where every interpolated value is escaped unless it is already
 * `SafeHtml` (the output of `html` itself). Values from webhooks, CSVs and recipes can never become markup.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | HtmlValue[]

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof SafeHtml) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  // Control and bidi override characters come out as escapes (src/reports/html-escape.ts).
  return escapeHtml(String(value))
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!
  return new SafeHtml(out)
}

/**
 * JSON for a `data-*` attribute (escaped like any other attribute value when interpolated). Its strings have their
 * control and bidi characters written as visible escapes first: escaped only as the attribute's text, `\u202e` was a
 * JSON escape that the page's `JSON.parse` turned back into the character — a chart's legend read an event type
 * `order.\u202edelif_tnemyap` as "order.payment_filed".
 */
export function jsonAttr(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? showUnshown(v) : v))
}

/** ISO time without milliseconds, or a dash. */
export function fmtTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—'
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ')
}

export function fmtIso(iso: string | null | undefined): string {
  return iso ? iso.replace(/\.\d{3}Z$/, 'Z').replace('T', ' ') : '—'
}

/** "3 min", "2 h 5 min": an age for people. */
export function fmtAge(ms: number | null): string {
  if (ms === null) return '—'
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  if (h < 48) return `${h} h ${m % 60} min`
  return `${Math.floor(h / 24)} d ${h % 24} h`
}
