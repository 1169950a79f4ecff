import type { PlannedEffect } from '../effects.ts'
import { OMITTED_WORDS, shownPlan } from '../recipes/shown-plan.ts'
import { planSize, type PlanOmitted } from '../recipes/kept-plan.ts'
import { fields, table } from './components.ts'
import { html, type SafeHtml } from './html.ts'

/**
 * A run's plan for people (the HTML form of `renderPlan` in recipes/present.ts): each batch with its rows
 * and rejected rows with reasons, each call with its schedule, idempotency key and retry_context, each mail — a long
 * plan's start (shownPlan), with how much more it has.
 */
export function renderPlanHtml(plan: PlannedEffect[], runOf?: string, omitted: PlanOmitted = {}): SafeHtml {
  if (planSize({ effects: plan, omitted }) === 0) return html`<p><em>Nothing planned: no call, batch or mail.</em></p>`
  const whole = runOf ? html` (a dry run from the command line prints them all: <code>npm run -s cli -- recipes run ${runOf} --dry-run --json</code>)` : ''
  const more = (n: number, what: string) => (n > 0 ? html`<p><em>… and ${n.toLocaleString('en')} more ${what}, not shown${whole}.</em></p>` : '')
  return html`${shownPlan(plan, omitted).map((entry) => {
    if ('omittedKind' in entry) return more(entry.omitted, OMITTED_WORDS[entry.omittedKind])
    const { effect, index: i } = entry
    if (effect.kind === 'batch') {
      const columns = [...new Set(effect.rows.flatMap((r) => Object.keys(r)))]
      return html`<section aria-label="${`Batch ${effect.name}`}">
<h3>Batch “${effect.name}” for agent ${effect.agent_id}: ${effect.rows.length + entry.omittedRows} row(s), ${effect.rejects.length + entry.omittedRejects} rejected</h3>
${table(`Batch ${effect.name} rows`, columns, effect.rows.map((r) => columns.map((c) => r[c] ?? '')), 'No rows.')}
${more(entry.omittedRows, 'rows')}
${effect.rejects.length ? html`<h4>Rejected rows</h4>${table(`Batch ${effect.name} rejected rows`, ['Row', 'Value', 'Reason'], effect.rejects.map((r) => [String(r.row), r.raw, r.reason]))}${more(entry.omittedRejects, 'rejected rows')}` : ''}
</section>`
    }
    if (effect.kind === 'call') {
      const r = effect.request
      const phone = r.parameters.find((p) => p.name === 'customer_phone')?.value ?? '(no customer_phone)'
      return html`<section aria-label="${`Call ${i + 1}`}">
<h3>Call ${phone}${effect.note ? ` — ${effect.note}` : ''}</h3>
${fields(`Call ${i + 1}`, [
  ['Agent', String(r.agent_id)],
  ['scheduled_for', r.scheduled_for ?? 'now'],
  ['Idempotency key', r.idempotency_key ?? '(generated)'],
  ['Continues conversation', r.conversation_id ?? '—'],
  ['Campaign', effect.campaign ?? '—'],
  ['Parameters', html`<code>${JSON.stringify(Object.fromEntries(r.parameters.map((p) => [p.name, p.value])))}</code>`],
  ['retry_context', r.retry_context ? html`<pre tabindex="0"><code>${JSON.stringify(r.retry_context, null, 2)}</code></pre>` : '—'],
])}
</section>`
    }
    if (effect.kind === 'state') {
      return html`<section aria-label="${`State ${i + 1}`}"><h3>State “${effect.key}” ${effect.action === 'set' ? 'set' : 'deleted'} (this dry run only)</h3>
${effect.action === 'set' ? html`<pre tabindex="0"><code>${effect.value ?? 'null'}</code></pre>` : ''}</section>`
    }
    if (effect.kind === 'publish') {
      return html`<section aria-label="${`Publish ${i + 1}`}"><h3>Publish “${effect.event_type}”</h3>
${fields(`Publish ${i + 1}`, [['Event id', effect.event_id], ['Destinations', effect.destinations.join(', ') || '—']])}</section>`
    }
    if (effect.kind === 'dnc') {
      return html`<section aria-label="${`Do-not-call ${i + 1}`}"><h3>Do-not-call: ${effect.action === 'add' ? 'add' : 'remove'} ${effect.phone}</h3>
${effect.action === 'add' ? fields(`Do-not-call ${i + 1}`, [['Reason', effect.reason ?? '—']]) : ''}</section>`
    }
    return html`<section aria-label="${`Mail ${i + 1}`}"><h3>Mail “${effect.subject}”</h3>
${fields(`Mail ${i + 1}`, [['To', effect.to.join(', ')], ['Attachments', (effect.attachments ?? []).join(', ') || '—']])}</section>`
  })}`
}
