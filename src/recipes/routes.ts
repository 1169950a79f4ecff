import { HTTPError, type H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { adminRoute } from '../utils/admin-auth.ts'
import { recipeListingJson, runJson } from './present.ts'
import { runRecipeNow } from './run-now.ts'
import { listRuns } from './runner.ts'
import { unknownRecipeForRuns } from './unknown-runs-name.ts'
import { discardRecipeQueueNow, listRecipesWithQueues, retryRecipeEventsNow } from './queue-requests.ts'
import { adminTime } from '../utils/admin-time.ts'
import { readAdminJsonObject } from '../utils/admin-body.ts'

function truthy(value: unknown): boolean {
  return value === true || value === 1 || (typeof value === 'string' && ['1', 'true', 'yes'].includes(value.toLowerCase()))
}

/**
 * `/admin/recipes`: list, recent runs, run now (optionally dry), retry a recipe's dead events, discard a removed
 * recipe's queue — the same as `recipes list` / `run` / `retry` / `discard`.
 */
export function registerRecipeRoutes(app: H3, rt: Runtime): void {
  app.get('/admin/recipes', adminRoute(rt, async (event) => {
    const { recipes, queues } = await listRecipesWithQueues(rt)
    return { data: recipeListingJson(recipes, queues) }
  }))

  app.get('/admin/recipes/:name/runs', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    const limit = Number(event.url.searchParams.get('limit') ?? 20)
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new HTTPError({ status: 400, message: 'limit must be a whole number from 1 to 500' })
    const runs = await listRuns(rt, { recipe: name, limit })
    const unknown = unknownRecipeForRuns(rt.config.recipes.dir, name, runs.length)
    if (unknown) throw new HTTPError({ status: 404, message: unknown })
    return { data: runs.map(runJson) }
  }))

  app.post('/admin/recipes/:name/run', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    let body: unknown = {}
    const text = await event.req.text()
    if (text.trim()) {
      try {
        body = JSON.parse(text)
      } catch {
        throw new HTTPError({ status: 400, message: 'body must be JSON, e.g. {"dry_run": true}' })
      }
    }
    const dryRun = truthy(event.url.searchParams.get('dry_run')) || truthy((body as { dry_run?: unknown } | null)?.dry_run)
    return { data: runJson(await runRecipeNow(rt, name, dryRun)) }
  }))

  /** Body (JSON, optional): `{ "since": ISO, "until": ISO }`; default: every dead or failed event of the recipe. */
  app.post('/admin/recipes/:name/retry', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    const body = await readAdminJsonObject(event, { since: 'ISO', until: 'ISO' })
    const since = adminTime(body.since, 'since')
    const until = adminTime(body.until, 'until')
    if (since !== undefined && until !== undefined && until <= since) throw new HTTPError({ status: 400, message: '"until" must be after "since"' })
    const queued = await retryRecipeEventsNow(rt, name, { ...(since === undefined ? {} : { since }), ...(until === undefined ? {} : { until }) })
    event.res.status = 202
    return { data: { queued } }
  }))

  /** Gives up on the events still waiting for a recipe that nothing runs any more. */
  app.post('/admin/recipes/:name/discard', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    return { data: { discarded: await discardRecipeQueueNow(rt, name) } }
  }))
}
