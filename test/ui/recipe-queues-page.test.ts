import { afterAll, beforeAll, expect, it } from 'vitest'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { DISCARDED } from '../../src/recipes/queue-control.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer, redirectedTo } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * The Recipes page shows each event recipe's queue; its buttons run again the events a recipe gave up on, and give
 * up the events still waiting for a recipe whose file is gone — against the service on a real port.
 */
const recipes = tempRecipesDir()
let ui: UiServer
let session: { jar: Map<string, string>; csrf: string }
// A file name may hold what HTML must escape (not a slash).
const REMOVED = 'old<b>&x'

beforeAll(async () => {
  recipes.write('crm', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'syncs the CRM', on: ['call.no_answer'], run: () => 'ok' })
`)
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, RECIPES_DIR: recipes.dir })
  const events = [await deliver(ui.server, ui.clock, { event_type: 'call.no_answer' }), await deliver(ui.server, ui.clock, { event_type: 'call.no_answer' })]
  // crm gave up on both (its retries ran out while the CRM was down); a recipe removed since has one still waiting.
  await enqueueEventFires(ui.server.rt, [...events.map((eventId) => ({ recipe: 'crm', eventId })), { recipe: REMOVED, eventId: events[0]! }])
  await ui.server.rt.store.db.updateTable('recipe_event_fires').set({ status: 'dead', attempts: 8, last_error: 'CRM is down' }).where('recipe', '=', 'crm').execute()
  session = await login(ui.server.url)
}, 60_000)

afterAll(async () => {
  await ui?.close()
  recipes.cleanup()
})

async function get(path: string): Promise<string> {
  const res = await fetch(`${ui.server.url}${path}`, { headers: { cookie: cookieHeader(session.jar) }, redirect: 'manual' })
  expect(res.status, path).toBe(200)
  return res.text()
}

function post(path: string): Promise<Response> {
  return fetch(`${ui.server.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookieHeader(session.jar), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: session.csrf }).toString(),
  })
}

const statuses = async (recipe: string) =>
  (await ui.server.rt.store.db.selectFrom('recipe_event_fires').select(['status', 'last_error']).where('recipe', '=', recipe).execute()).map((f) => `${f.status}:${f.last_error}`)

it('shows each event queue, and a removed recipe whose events still wait, its name escaped', async () => {
  const page = await get('/ui/recipes')
  expect(page).toMatch(/Event queue<\/th><td class="wrap">0 waiting, 2 dead<\/td>/)
  expect(page).toContain('action="ui/recipes/crm/retry"')
  expect(page).toContain('<h2>old&lt;b&gt;&amp;x</h2>')
  expect(page).not.toContain(REMOVED)
  expect(page).toContain(`action="ui/recipes/${encodeURIComponent(REMOVED)}/discard"`)
  expect(page).toMatch(/1 event\(s\) still wait for it, and nothing runs them/)
})

it('Retry dead events queues them again; Discard gives up the removed recipe\'s; mistakes are refused', async () => {
  const retried = await post('/ui/recipes/crm/retry')
  expect([retried.status, redirectedTo(retried)]).toEqual([303, '/ui/recipes?done=recipe-retried&n=2'])
  expect(await statuses('crm')).toEqual(['pending:null', 'pending:null'])
  const after = await get('/ui/recipes?done=recipe-retried&n=2')
  expect(after).toContain('Queued 2 event(s) again')
  expect(after).toMatch(/Event queue<\/th><td class="wrap">2 waiting, 0 dead<\/td>/)
  expect(after).not.toContain('action="ui/recipes/crm/retry"')

  // crm's file is there: its queue is live, not to be discarded; a name nothing was queued for is unknown.
  expect((await post('/ui/recipes/crm/discard')).status).toBe(409)
  expect((await post('/ui/recipes/nope/retry')).status).toBe(404)
  expect((await post(`/ui/recipes/${encodeURIComponent(REMOVED)}/retry`)).status).toBe(409)

  const discarded = await post(`/ui/recipes/${encodeURIComponent(REMOVED)}/discard`)
  expect([discarded.status, redirectedTo(discarded)]).toEqual([303, '/ui/recipes?done=recipe-queue-discarded&n=1'])
  expect(await statuses(REMOVED)).toEqual([`dead:${DISCARDED}`])
  const gone = await get('/ui/recipes?done=recipe-queue-discarded&n=1')
  expect(gone).toContain('Gave up 1 event(s) that waited for a removed recipe.')
  expect(gone).not.toContain('old&lt;b&gt;')
})
