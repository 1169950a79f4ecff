import { expect, it } from 'vitest'
import { adminHeaders, closedAfterEach, createForwardHarness, destination, type ForwardHarness } from './helpers.ts'

/**
 * The replay route's body names the range to replay; a key it does not read (`"sinse"`) is a mistake to answer, not
 * something to ignore — ignored, the route would replay everything the destination ever failed.
 */
let h: ForwardHarness | undefined
const sink = closedAfterEach(() => {
  const current = h
  h = undefined
  return current
})

const replay = (body: string) => h!.app.fetch(new Request('http://localhost/admin/destinations/crm/replay', { method: 'POST', headers: { ...adminHeaders, 'content-type': 'application/json' }, body }))

it('POST /admin/destinations/:name/replay answers 400 naming an unknown key, with the key it likely meant', async () => {
  const s = await sink()
  h = await createForwardHarness('sqlite', [destination(s)])
  const misspelled = await replay('{"sinse":"2026-03-01T00:00:00Z"}')
  expect([misspelled.status, await misspelled.json()]).toEqual([
    400,
    { error: { message: 'body has an unknown key "sinse" (did you mean "since"?): { "since": ISO, "until": ISO }', type: 'invalid_request' } },
  ])
  const stranger = await replay('{"since":"2026-03-01T00:00:00Z","destination":"crm"}')
  expect([stranger.status, ((await stranger.json()) as { error: { message: string } }).error.message]).toEqual([400, 'body has an unknown key "destination": { "since": ISO, "until": ISO }'])
  // The keys it reads, and no body at all, still replay.
  expect((await replay('{"since":"2026-03-01T00:00:00Z","until":"2026-03-02T00:00:00Z"}')).status).toBe(202)
  expect((await replay('')).status).toBe(202)
})
