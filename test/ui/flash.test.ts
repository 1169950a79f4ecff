import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createApp } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent, SECRET } from '../webhooks/helpers.ts'
import { TOKEN } from './helpers.ts'

/**
 * A notice's code comes from the URL, so any name a link can carry — Object.prototype's own ones included — is
 * either one of the known codes or nothing on the page: never a 500, never words the service did not write.
 */
describeEachDialect('flash codes from the URL', (dialect) => {
  let rt: TestRuntime
  let app: H3
  let eventId: string
  beforeAll(async () => {
    rt = await createTestRuntime({ dialect, env: { ADMIN_TOKEN: TOKEN } })
    app = createApp(rt)
    const event = makeEvent()
    const body = JSON.stringify(event)
    const res = await app.fetch(
      new Request('http://localhost/webhooks/formant', {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-formantai-signature': signFormant(body, SECRET),
          'x-formantai-timestamp': String(Math.floor(rt.clock.now() / 1000)),
          'x-formantai-event-id': event.event_id,
        },
      }),
    )
    expect(res.status).toBe(204)
    eventId = event.event_id
  })
  afterAll(() => rt.close())

  const get = (path: string) => app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  const flashOf = (page: string) => /<p class="flash" role="status">([\s\S]*?)<\/p>/.exec(page)?.[1] ?? null

  const INHERITED = [
    'hasOwnProperty', 'valueOf', 'toLocaleString', 'propertyIsEnumerable', 'isPrototypeOf', '__defineGetter__', '__defineSetter__',
    '__lookupGetter__', '__lookupSetter__', '__proto__', 'toString', 'constructor',
  ]

  it('a name Object.prototype has is no code: 200 and no notice, on every page that shows one', async () => {
    for (const page of ['/ui/events', `/ui/events/${eventId}`, '/ui/destinations', '/ui/recipes', '/ui/mail']) {
      for (const code of INHERITED) {
        const path = `${page}?done=${code}&n=1&s=processed`
        const res = await get(path)
        expect(res.status, path).toBe(200)
        const body = await res.text()
        expect(flashOf(body), path).toBeNull()
        expect(body, path).not.toContain('[object')
      }
    }
  })

  it('a known code still shows its notice', async () => {
    const body = await (await get('/ui/events?done=requeued&n=3')).text()
    expect(flashOf(body)).toBe('Queued 3 failed or dead event(s) for processing again.')
  })
})
