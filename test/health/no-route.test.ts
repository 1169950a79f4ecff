import { afterEach, expect, it } from 'vitest'
import { createApp, createOpsApp } from '../../src/server.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

// A path no route answers got h3's own body, `{"status":404,"message":"Cannot find any route matching [GET]
// http://<Host>/…"}` — another shape than every other error, echoing the request's Host header back.
it('a path no route answers is 404 in the one error shape; a dashboard path gets a page', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: 'a-long-admin-token-123' } })
  const app = createApp(rt)
  const get = (path: string, method = 'GET') =>
    app.fetch(new Request(`http://evil.example${path}`, { method, headers: { authorization: 'Bearer a-long-admin-token-123' } }))
  for (const [method, path] of [['GET', '/nope'], ['POST', '/webhooks'], ['GET', '/admin/nope'], ['GET', '/v2/call']] as const) {
    const res = await get(path, method)
    expect(res.status, path).toBe(404)
    expect(await res.json(), path).toEqual({ error: { type: 'not_found', message: `no route for ${method} ${path}` } })
  }
  const page = await get('/ui/nope%3Cscript%3E')
  expect(page.status).toBe(404)
  expect(page.headers.get('content-type')).toMatch(/^text\/html/)
  expect(page.headers.get('cache-control')).toBe('no-store')
  const html = await page.text()
  expect(html).toContain('<a href="../ui">Back to the dashboard</a>')
  expect(html).not.toContain('<script>')
  expect(html).not.toContain('evil.example')
})

it("a worker's operations port answers a path it has no route for in the same shape", async () => {
  rt = await createTestRuntime()
  const res = await createOpsApp(rt).fetch(new Request('http://evil.example/webhooks/formant', { method: 'POST' }))
  expect(res.status).toBe(404)
  expect(await res.json()).toEqual({ error: { type: 'not_found', message: 'no route for POST /webhooks/formant' } })
})
