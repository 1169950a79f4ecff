import { HTTPError, type H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { adminRoute } from '../utils/admin-auth.ts'
import { listRecipes } from './list-task.ts'
import { recipeInfoJson, runJson } from './present.ts'
import { runRecipeNow } from './run-now.ts'
import { listRuns } from './runner.ts'

function truthy(value: unknown): boolean {
  return value === true || value === 1 || (typeof value === 'string' && ['1', 'true', 'yes'].includes(value.toLowerCase()))
}

/** `/admin/recipes`: list, recent runs, run now (optionally dry) — the same as `recipes list` / `recipes run`. */
export function registerRecipeRoutes(app: H3, rt: Runtime): void {
  app.get('/admin/recipes', adminRoute(rt, async (event) => {
    return { data: (await listRecipes(rt)).map(recipeInfoJson) }
  }))

  app.get('/admin/recipes/:name/runs', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    const limit = Number(event.url.searchParams.get('limit') ?? 20)
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new HTTPError({ status: 400, message: 'limit must be a whole number from 1 to 500' })
    return { data: (await listRuns(rt, { recipe: name, limit })).map(runJson) }
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
}
