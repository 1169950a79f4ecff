import { html, type HtmlValue, type SafeHtml } from './html.ts'

/** A table that scrolls sideways inside its box, so the page itself never does on a phone. */
export function table(caption: string, headers: string[], rows: HtmlValue[][], empty = 'Nothing here yet.'): SafeHtml {
  if (rows.length === 0) return html`<p><em>${empty}</em></p>`
  return html`<div class="table-wrap" role="region" aria-label="${caption}" tabindex="0"><table>
<thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
</table></div>`
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

/** A chart drawn by app.js with uPlot, with its figures also as a table for screen readers. */
export function chart(title: string, spec: { x: number[]; series: Array<{ label: string; values: number[] }>; time?: boolean }, xLabel: (x: number) => string): SafeHtml {
  return html`<figure>
<figcaption>${title}</figcaption>
<div class="chart" role="img" aria-label="${`Chart: ${title}`}" data-chart="${JSON.stringify(spec)}"></div>
<details><summary>${title}: the figures</summary>
${table(title, ['', ...spec.series.map((s) => s.label)], spec.x.map((x, i) => [xLabel(x), ...spec.series.map((s) => String(s.values[i] ?? 0))]))}
</details>
</figure>`
}

/** The first `n` characters of a long text, with an ellipsis. */
export function clip(text: string | null | undefined, n = 80): string {
  if (!text) return ''
  return text.length > n ? `${text.slice(0, n)}…` : text
}
