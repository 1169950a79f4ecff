import { getRouterParam, HTTPError, type H3 } from 'h3'
import { runRecipeNow } from '../recipes/run-now.ts'
import { getRun, listRunRecords, type RunRecord } from '../recipes/runner.ts'
import type { Runtime } from '../runtime.ts'
import { clip, fields, status, table } from './components.ts'
import { field, formOf } from './form.ts'
import { fmtTime, html } from './html.ts'
import { csrfField, page } from './layout.ts'
import { renderPlanHtml } from './plan.ts'
import { seeOther } from './responses.ts'
import { summaryLine } from '../recipes/summary.ts'
import { isStranded, runsItsQueue, type QueueCounts } from '../recipes/queue-control.ts'
import { discardRecipeQueueNow, listRecipesWithQueues, retryRecipeEventsNow } from '../recipes/queue-requests.ts'
import { removedRecipes } from '../recipes/present.ts'
import { flashMessage } from './flash.ts'

const RUNS_SHOWN = 5

function queueText(queue: QueueCounts): string {
  return `${queue.queued} waiting, ${queue.dead} dead`
}

function duration(run: Pick<RunRecord, 'startedAt' | 'endedAt'>): string {
  return run.endedAt === null ? 'running' : `${run.endedAt - run.startedAt} ms`
}

/** The page of one recorded run: `/ui/recipes/<name>/runs/<id>`. */
function runUrl(recipe: string, id: string): string {
  return `ui/recipes/${encodeURIComponent(recipe)}/runs/${encodeURIComponent(id)}`
}

/**
 * `/ui/recipes`: triggers, next run, last runs, a broken recipe's error; dry run (shows the plan) and run now.
 * A run's POST answers 303 to the run's own page (a GET): reloading it, or going back to it, shows the run
 * again instead of posting the form again — which, for "Run now", started another real run.
 */
export function registerRecipesPage(app: H3, rt: Runtime): void {
  app.get('/ui/recipes', async (event) => {
    const { recipes, queues } = await listRecipesWithQueues(rt)
    const runs = await Promise.all(recipes.map((r) => listRunRecords(rt, { recipe: r.name, limit: RUNS_SHOWN })))
    const none: QueueCounts = { queued: 0, dead: 0 }
    // Removed recipes with events still waiting: nothing runs those; they can be given up (or the file put back).
    const removed = removedRecipes(recipes, queues)
    return page(event, {
      title: 'Recipes',
      flash: flashMessage(event.url.searchParams),
      body: [
        ...removed.map(([name, q]) => html`<article aria-label="${`Removed recipe ${name}`}">
<header><h2>${name}</h2><p>No longer in <code>${rt.config.recipes.dir}</code>: ${q.queued} event(s) still wait for it, and nothing runs them.</p></header>
<div class="actions"><form method="post" action="${`ui/recipes/${encodeURIComponent(name)}/discard`}" data-confirm="${`Give up the ${q.queued} event(s) still waiting for ${name}? Its file is gone: nothing runs them.`}">${csrfField(event)}<button type="submit" class="secondary">Discard its queue</button></form></div>
</article>`),
        ...(recipes.length === 0 ? [html`<p>No recipes in <code>${rt.config.recipes.dir}</code>.</p>`] : []),
        ...recipes.map((r, i) => { const queue = queues.get(r.name) ?? none; return html`<article aria-label="${`Recipe ${r.name}`}">
<header><h2>${r.name}</h2>${r.description ? html`<p>${r.description}</p>` : ''}</header>
${r.broken ? html`<p class="flash error" role="alert"><strong>Broken:</strong> ${r.broken}<br><small>${r.file}</small></p>` : ''}
${fields(`Recipe ${r.name}`, [
  ['Schedule', r.schedule ? `${r.schedule} (${r.timezone})` : '—'],
  ['On events', r.on.join(', ') || '—'],
  ['Next run', fmtTime(r.nextRun)],
  ...(r.on.length > 0 || queue.queued + queue.dead > 0 ? [['Event queue', queueText(queue)] as [string, string]] : []),
  ['File', r.file],
])}
<div class="actions">
<form method="post" action="${`ui/recipes/${encodeURIComponent(r.name)}/run`}">${csrfField(event)}<input type="hidden" name="dry_run" value="1"><button type="submit" class="secondary"${r.broken ? html` disabled` : ''}>Dry run</button></form>
<form method="post" action="${`ui/recipes/${encodeURIComponent(r.name)}/run`}" data-confirm="${`Run ${r.name} now? Its calls, batches and mail are real.`}">${csrfField(event)}<input type="hidden" name="dry_run" value="0"><button type="submit"${r.broken ? html` disabled` : ''}>Run now</button></form>
${queue.dead > 0 && runsItsQueue(r) ? html`<form method="post" action="${`ui/recipes/${encodeURIComponent(r.name)}/retry`}" data-confirm="${`Run again the ${queue.dead} event(s) ${r.name} gave up on? Fix what made them fail first.`}">${csrfField(event)}<button type="submit" class="secondary">Retry dead events</button></form>` : ''}
${isStranded(r, queue) ? html`<form method="post" action="${`ui/recipes/${encodeURIComponent(r.name)}/discard`}" data-confirm="${`Give up the ${queue.queued} event(s) still waiting for ${r.name}? It takes no events now: nothing runs them.`}">${csrfField(event)}<button type="submit" class="secondary">Discard its queue</button></form>` : ''}
</div>
<h3>Last runs</h3>
${table(`Runs of ${r.name}`, ['Started', 'Trigger', 'Status', 'Duration', 'Summary', 'Error'], runs[i]!.map((run) => [
  html`<a href="${runUrl(r.name, run.id)}">${fmtTime(run.startedAt)}</a>`, `${run.trigger}${run.dryRun ? ' (dry run)' : ''}`, status(run.status), duration(run), clip(run.summary === null ? null : summaryLine(run.summary), 140), clip(run.error, 140),
]), 'Not run yet.')}
</article>` }),
      ],
    })
  })

  app.post('/ui/recipes/:name/retry', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    const queued = await retryRecipeEventsNow(rt, name)
    rt.log.info({ recipe: name, queued }, 'dashboard: a recipe\'s dead events queued again')
    return seeOther(event, `ui/recipes?done=recipe-retried&n=${queued}`)
  })

  app.post('/ui/recipes/:name/discard', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    const discarded = await discardRecipeQueueNow(rt, name)
    rt.log.info({ recipe: name, discarded }, 'dashboard: the queue of a removed recipe given up')
    return seeOther(event, `ui/recipes?done=recipe-queue-discarded&n=${discarded}`)
  })

  app.post('/ui/recipes/:name/run', async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    const dryRun = field(await formOf(event), 'dry_run') !== '0'
    const run = await runRecipeNow(rt, name, dryRun)
    rt.log.info({ recipe: name, dry_run: dryRun, run_id: run.id, status: run.status }, 'dashboard: recipe run')
    return seeOther(event, runUrl(name, run.id))
  })

  app.get('/ui/recipes/:name/runs/:id', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    const id = getRouterParam(event, 'id', { decode: true }) ?? ''
    const run = await getRun(rt, name, id)
    if (!run) throw new HTTPError({ status: 404, message: `${name} has no run with id "${id}"` })
    return page(event, {
      title: run.dryRun ? `Dry run: ${name}` : `Run: ${name}`,
      active: 'Recipes',
      body: html`<p><a href="ui/recipes">← Recipes</a></p>
${run.dryRun ? html`<p class="flash" role="status">Dry run: nothing was called, launched or mailed. This is what a run would do.</p>` : ''}
${fields('Run', [
  ['Status', html`<span id="run-status">${status(run.status)}</span>`],
  ['Started', fmtTime(run.startedAt)],
  ['Trigger', run.trigger],
  ['Duration', duration(run)],
  ['Summary', run.summary === null ? '—' : typeof run.summary === 'string' ? run.summary : html`<p>${summaryLine(run.summary)}</p><pre tabindex="0"><code>${JSON.stringify(run.summary, null, 2)}</code></pre>`],
  ['Error', run.error ?? '—'],
])}
<h2>Plan</h2>
<div id="plan">${renderPlanHtml(run.plan, name, run.planOmitted)}</div>`,
    })
  })
}
