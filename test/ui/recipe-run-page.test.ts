import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer, redirectedTo } from './helpers.ts'

/**
 * "Run now" posts a form: its answer is a 303 to the run's own page, so reloading that page (or going back to it)
 * shows the recorded run again instead of posting the form again — which started another real run.
 */
describe('a recipe run from the dashboard', () => {
  const recipes = tempRecipesDir()
  let ui: UiServer
  let base: string
  let cookie: string
  let csrf: string

  beforeAll(async () => {
    recipes.write('counter', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'counts its runs', async run() { return { ran: 1 } } })
`)
    ui = await startUiServer({ ADMIN_TOKEN: TOKEN, RECIPES_DIR: recipes.dir })
    base = ui.server.url
    const session = await login(base)
    cookie = cookieHeader(session.jar)
    csrf = session.csrf
  }, 60_000)
  afterAll(async () => {
    await ui?.close()
    recipes.cleanup()
  })

  async function runsOf(name: string): Promise<Array<{ id: string; dryRun: boolean }>> {
    const res = await fetch(`${base}/admin/recipes/${name}/runs`, { headers: { authorization: `Bearer ${TOKEN}` } })
    return ((await res.json()) as { data: Array<{ id: string; dryRun: boolean }> }).data
  }

  function post(form: Record<string, string>): Promise<Response> {
    return fetch(`${base}/ui/recipes/counter/run`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    })
  }

  it('"Run now" (asked first) answers 303 to the run\'s page; reloading that page runs nothing again', async () => {
    const list = await (await fetch(`${base}/ui/recipes`, { headers: { cookie } })).text()
    expect(list).toContain('data-confirm="Run counter now? Its calls, batches and mail are real."')

    const res = await post({ _csrf: csrf, dry_run: '0' })
    expect(res.status).toBe(303)
    const location = redirectedTo(res)!
    expect(location).toMatch(/^\/ui\/recipes\/counter\/runs\/[^/?#]+$/)
    const runs = await runsOf('counter')
    expect(runs).toHaveLength(1)
    expect(location).toBe(`/ui/recipes/counter/runs/${encodeURIComponent(runs[0]!.id)}`)

    for (let i = 0; i < 3; i++) {
      const shown = await fetch(`${base}${location}`, { headers: { cookie } })
      expect(shown.status).toBe(200)
      const page = await shown.text()
      expect(page).toContain('<h1>Run: counter</h1>')
      expect(page).toMatch(/<span id="run-status"><span class="status-succeeded">succeeded<\/span><\/span>/)
      expect(page).toContain('<p>ran 1</p>')
      expect(page).not.toContain('Dry run: nothing was called')
    }
    expect(await runsOf('counter')).toHaveLength(1)

    // The last runs link to the same page.
    expect(await (await fetch(`${base}/ui/recipes`, { headers: { cookie } })).text()).toContain(`href="${location.slice(1)}"`)
  })

  it('a dry run goes to its own page too; CSRF is still required; an unknown run is a 404 page', async () => {
    const dry = await post({ _csrf: csrf, dry_run: '1' })
    expect(dry.status).toBe(303)
    const page = await (await fetch(`${base}${redirectedTo(dry)!}`, { headers: { cookie } })).text()
    expect(page).toContain('<h1>Dry run: counter</h1>')
    expect(page).toContain('Dry run: nothing was called, launched or mailed.')
    const before = (await runsOf('counter')).length

    const forged = await post({ dry_run: '0' })
    expect(forged.status).toBe(403)
    expect(await runsOf('counter')).toHaveLength(before)

    const id = (await runsOf('counter'))[0]!.id
    for (const path of ['/ui/recipes/counter/runs/nope', `/ui/recipes/other/runs/${encodeURIComponent(id)}`]) {
      const missing = await fetch(`${base}${path}`, { headers: { cookie } })
      expect(missing.status, path).toBe(404)
      expect(await missing.text()).toContain('<h1>Not found</h1>')
    }
  })
})
