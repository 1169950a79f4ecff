import { html, jsonAttr, type HtmlValue, type SafeHtml } from './html.ts'

/** A table that scrolls sideways inside its box, so the page itself never does on a phone. */
export function table(caption: string, headers: Array<string | SafeHtml>, rows: HtmlValue[][], empty = 'Nothing here yet.'): SafeHtml {
  if (rows.length === 0) return html`<p><em>${empty}</em></p>`
  return html`<div class="table-wrap" role="region" aria-label="${caption}" tabindex="0"><table>
<thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
</table></div>`
}

/** Text for screen readers only (`.visually-hidden` in app.css): the header of a column of buttons, say. */
export function visuallyHidden(text: string): SafeHtml {
  return html`<span class="visually-hidden">${text}</span>`
}

/** Label/value pairs (a record's fields). */
export function fields(caption: string, pairs: Array<[string, HtmlValue]>): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="${caption}" tabindex="0"><table>
<tbody>${pairs.map(([k, v]) => html`<tr><th scope="row">${k}</th><td class="wrap">${v}</td></tr>`)}</tbody>
</table></div>`
}

export function status(value: string): SafeHtml {
  return html`<span class="status-${value.replace(/[^a-z_]/gi, '')}">${value}</span>`
}

export function card(label: string, value: HtmlValue, note?: HtmlValue): SafeHtml {
  return html`<article><small>${label}</small><span class="figure">${value}</span>${note ? html`<small>${note}</small>` : ''}</article>`
}

/**
 * A chart drawn by app.js with uPlot, with its figures also as a table for screen readers. `days`: x is noon UTC of
 * each date, and the axis shows dates, not hours.
 */
export function chart(title: string, spec: { x: number[]; series: Array<{ label: string; values: number[] }>; time?: boolean; days?: boolean }, xLabel: (x: number) => string): SafeHtml {
  return html`<figure>
<figcaption>${title}</figcaption>
<div class="chart" role="img" aria-label="${`Chart: ${title}`}" data-chart="${jsonAttr(spec)}"></div>
<details><summary>${title}: the figures</summary>
${table(title, [spec.days ? 'Day' : 'Time (UTC)', ...spec.series.map((s) => s.label)], spec.x.map((x, i) => [xLabel(x), ...spec.series.map((s) => String(s.values[i] ?? 0))]))}
</details>
</figure>`
}

/**
 * A long id (a UUID is 36 characters) shown by its first and last 4 characters, the whole of it in the tooltip and,
 * given `href`, a link (usually to the records that share it): three of them in a row push a table's last columns
 * (the error) out of sight on a laptop's screen. Detail pages show ids whole.
 */
export function shortId(id: string | null | undefined, href?: string): SafeHtml | string {
  if (!id) return '—'
  // Both ends: time-ordered ids (UUID v7) share their first characters, a suffix (`…_2`) tells a chain's calls apart.
  const shown = id.length > 12 ? `${id.slice(0, 4)}…${id.slice(-4)}` : id
  return href ? html`<a href="${href}" title="${id}"><code>${shown}</code></a>` : html`<code title="${id}">${shown}</code>`
}

/**
 * A long text in a table cell (an error, a summary): its first `n` characters, with an ellipsis and the whole of it
 * in the tooltip when cut. It wraps rather than widening its column, so the table still fits a laptop's screen.
 */
export function clip(text: string | null | undefined, n = 80): SafeHtml | string {
  if (!text) return ''
  return text.length > n ? html`<span class="cell-text" title="${text}">${text.slice(0, n)}…</span>` : html`<span class="cell-text">${text}</span>`
}

/**
 * A day in the link that is not one (`date=garbage`, 2026-02-30) shows the page's default day, deliberately, as a missing
 * one does — and says so, rather than showing another day as if it were the one asked for. The value is not quoted back:
 * a link must not put words on the page.
 */
export function dayNotUnderstood(asked: string | null, shown: string, which: string): SafeHtml | string {
  if (!asked) return ''
  return html`<p class="flash error" role="status">The day in the link is not a calendar day (YYYY-MM-DD, years 0001–9998): showing ${shown}, ${which}, instead.</p>`
}
