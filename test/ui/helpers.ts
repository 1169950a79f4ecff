import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer, type RunningServer } from '../../src/server.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

export const TOKEN = 'test-admin-token-0123456789'
export const SHIPPED_RECIPES = shippedRecipesCopy()

export interface UiServer {
  server: RunningServer
  clock: ManualClock
  dataDir: string
  close(): Promise<void>
}

/** The whole service on a real port, background work off, a manual clock. */
export async function startUiServer(env: Record<string, string> = {}, options: { clockStart?: string } = {}): Promise<UiServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-ui-'))
  const clock = createManualClock(options.clockStart ?? '2026-03-02T06:00:00Z')
  const server = await startServer({
    env: {
      PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: SHIPPED_RECIPES, WEBHOOK_SECRET: 'whsec_ui_secret', LOG_LEVEL: 'silent',
      RECONCILE_INTERVAL_SECONDS: '0', ...env,
    },
    overrides: { clock, log: createSilentLogger() },
    background: false,
  })
  return {
    server,
    clock,
    dataDir,
    async close() {
      await server.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Cookies from Set-Cookie headers as one Cookie header (name=value pairs only). */
export function cookiesOf(res: Response, jar: Map<string, string> = new Map()): Map<string, string> {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';')
    const eq = pair!.indexOf('=')
    const name = pair!.slice(0, eq).trim()
    const value = pair!.slice(eq + 1).trim()
    if (value === '' || /max-age=0/i.test(line)) jar.delete(name)
    else jar.set(name, value)
  }
  return jar
}

export function cookieHeader(jar: Map<string, string>): string {
  return [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
}

/** Logs in through the form as a browser would; returns the cookie jar and the session's CSRF token. */
export async function login(base: string, token = TOKEN, headers: Record<string, string> = {}): Promise<{ jar: Map<string, string>; csrf: string; res: Response }> {
  const jar = new Map<string, string>()
  const form = await fetch(`${base}/ui/login`, { headers, redirect: 'manual' })
  cookiesOf(form, jar)
  const nonce = /name="_login" value="([^"]+)"/.exec(await form.text())?.[1] ?? ''
  const res = await fetch(`${base}/ui/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) },
    body: new URLSearchParams({ _login: nonce, token, next: '/ui' }).toString(),
  })
  cookiesOf(res, jar)
  const page = await fetch(`${base}/ui`, { headers: { ...headers, cookie: cookieHeader(jar) }, redirect: 'manual' })
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ''
  return { jar, csrf, res }
}

/**
 * Where a redirect leads, as the path the service answers there: a dashboard's Location is relative to the request's
 * path (src/ui/root-relative.ts), resolved here as a browser does. `from` is the request's URL when the response has
 * none (app.fetch).
 */
export function redirectedTo(res: Response, from = res.url): string | null {
  const location = res.headers.get('location')
  if (location === null) return null
  const url = new URL(location, new URL(from, 'http://switchboard.invalid'))
  return url.pathname + url.search
}
