import type { H3, H3Event } from 'h3'
import { readiness as serviceReadiness } from '../health/readiness.ts'
import { listRecipes } from '../recipes/list-task.ts'
import { runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import type { EventHourCount } from '../webhooks/events.ts'
import { card, chart, status, table } from './components.ts'
import { fmtAge, fmtTime, html, type SafeHtml } from './html.ts'
import { page } from './layout.ts'
import { overviewCountsTask } from './overview-counts.ts'
import { setPageHeaders } from './security-headers.ts'
import type { ForwardingTotals } from '../destinations/deliveries.ts'

const HOUR = 3_600_000
export const OVERVIEW_REFRESH_SECONDS = 15

/** What GET /readyz says, in one line for the overview card. */
async function readiness(rt: Runtime): Promise<{ ok: boolean; detail: string }> {
  const { httpStatus, body } = await serviceReadiness(rt)
  const dependencies = Object.entries((body.dependencies ?? {}) as Record<string, string>).map(([name, state]) => `${name} ${state}`)
  const ok = httpStatus === 200 && body.status === 'ready'
  const detail = ok ? `${rt.store.dialect} reachable, migrations applied` : String(body.error ?? body.status)
  return { ok, detail: [detail, ...dependencies].join(' · ') }
}

/** 24 hourly buckets ending with the current hour; one series per key (type or status). */
function hourlySeries(counts: EventHourCount[], key: 'event_type' | 'status', firstHour: number) {
  const x = Array.from({ length: 24 }, (_, i) => (firstHour + i * HOUR) / 1000)
  const names = [...new Set(counts.map((c) => c[key]))].sort()
  const series = names.map((name) => {
    const values = new Array<number>(24).fill(0)
    for (const c of counts) if (c[key] === name) {
      const i = Math.round((c.hour - firstHour) / HOUR)
      if (i >= 0 && i < 24) values[i]! += c.count
    }
    return { label: name, values }
  })
  return { x, series }
}

const hourLabel = (x: number) => `${new Date(x * 1000).toISOString().slice(11, 16)} UTC`

/** Events forwarded to the team's systems (DESTINATIONS): what waits, what died, which destination is off. */
function forwardingCard(f: ForwardingTotals, now: number): SafeHtml {
  const notes: SafeHtml[] = [html`oldest ${fmtAge(f.oldestAt === null ? null : now - f.oldestAt)}`]
  notes.push(f.dead > 0 ? html`<a href="ui/destinations?status=dead">${f.dead} dead</a>` : html`0 dead`)
  if (f.disabled.length > 0) notes.push(html`<span class="status-disabled">${f.disabled.join(', ')} disabled</span>`)
  if (f.paused.length > 0) notes.push(html`<span class="status-paused">${f.paused.join(', ')} paused</span>`)
  if (f.removed.length > 0) {
    const never = f.removed.reduce((n, r) => n + r.pending, 0)
    notes.push(html`<span class="status-removed">${f.removed.map((r) => r.name).join(', ')} removed: ${never} never sent</span>`)
  }
  notes.push(html`<a href="ui/destinations">destinations</a>`)
  return card('Forwarding', `${f.waiting} waiting`, html`${notes.flatMap((n, i) => (i === 0 ? [n] : [' · ', n]))}`)
}

/** The part of the overview that refreshes itself (htmx polls `/ui/overview/live`). */
async function live(rt: Runtime): Promise<SafeHtml> {
  const now = rt.clock.now()
  // The recipes are listed by the processing thread: while it restarts (for longer than the list waits), the overview
  // still shows the rest.
  const [ready, counts, recipes] = await Promise.all([readiness(rt), runProcessingTask(rt, overviewCountsTask, { now }), listRecipes(rt).catch((error: Error) => error)])
  const { firstHour, backlog, last5, lastHour, hourly, mail, calls, forwarding } = counts
  const byType = hourlySeries(hourly, 'event_type', firstHour)
  const byStatus = hourlySeries(hourly, 'status', firstHour)
  const oldestAge = backlog.oldestReceivedAt === null ? null : now - backlog.oldestReceivedAt
  return html`<div id="overview-live" hx-get="ui/overview/live" hx-trigger="${`every ${OVERVIEW_REFRESH_SECONDS}s`}" hx-swap="outerHTML">
<div class="cards">
${card('Service', ready.ok ? 'ready' : 'not ready', ready.detail)}
${card('Ingest', `${(last5 / 5).toFixed(1)}/min`, `${lastHour} in the last hour`)}
${card('Backlog', String(backlog.pending + backlog.failed), `${backlog.pending} pending · ${backlog.failed} retrying · oldest ${fmtAge(oldestAge)}`)}
${card('Dead events', String(backlog.dead), html`<a href="ui/events?status=dead">see them</a>`)}
${card('Mail (7 days)', mail.written > 0 && mail.sent === 0 ? `${mail.written} written` : `${mail.sent + mail.written} sent`, `${mail.written > 0 && mail.sent > 0 ? `${mail.written} of them written to the outbox · ` : mail.written > 0 ? 'to the outbox folder, not sent (no SMTP_URL) · ' : ''}${mail.failed} failed · ${mail.queued} queued`)}
${card(`Calls today (${rt.config.recipes.timezone})`, String(calls.reduce((s, c) => s + c.count, 0)), calls.map((c) => `${c.status} ${c.count}`).join(' · ') || 'none yet')}
${forwarding ? forwardingCard(forwarding, now) : ''}
</div>
<h2>Events, last 24 hours</h2>
${chart('Events by type per hour', byType, hourLabel)}
${chart('Events by status per hour', byStatus, hourLabel)}
<h2>Recipes</h2>
${recipes instanceof Error ? html`<p>Not listed just now: ${recipes.message}.</p>` : table('Recipes', ['Recipe', 'Last run', 'Result', 'Next run'], recipes.map((r) => [
  html`<a href="ui/recipes">${r.name}</a>`,
  r.lastRun ? fmtTime(r.lastRun.startedAt) : '—',
  r.broken ? html`<span class="status-failed">broken</span>` : r.lastRun ? status(r.lastRun.status) : '—',
  fmtTime(r.nextRun),
]), 'No recipes in RECIPES_DIR.')}
<p><small>Updated ${fmtTime(now)}; refreshes every ${OVERVIEW_REFRESH_SECONDS} s.</small></p>
</div>`
}

export function registerOverviewPage(app: H3, rt: Runtime): void {
  app.get('/ui', async (event: H3Event) => page(event, { title: 'Overview', body: await live(rt) }))
  app.get('/ui/overview/live', async (event: H3Event) => {
    // A fragment, but served at its own URL: it gets the same headers as a page (CSP, no framing, nosniff).
    setPageHeaders(event)
    event.res.headers.set('content-type', 'text/html; charset=utf-8')
    return (await live(rt)).value
  })
}
