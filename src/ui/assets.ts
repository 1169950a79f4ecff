import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { HTTPError, type H3 } from 'h3'

/**
 * The dashboard's assets, served by switchboard itself from node_modules (no CDN: it works offline and the
 * CSP allows 'self' only). Versions are pinned in package.json; the URL carries the package version so a
 * browser cache never mixes an old file with a new page.
 */
const require = createRequire(import.meta.url)

const VENDOR: Record<string, { module: string; type: string }> = {
  'pico.min.css': { module: '@picocss/pico/css/pico.min.css', type: 'text/css; charset=utf-8' },
  'htmx.min.js': { module: 'htmx.org/dist/htmx.min.js', type: 'text/javascript; charset=utf-8' },
  'uPlot.iife.min.js': { module: 'uplot/dist/uPlot.iife.min.js', type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { module: 'uplot/dist/uPlot.min.css', type: 'text/css; charset=utf-8' },
}

const OWN: Record<string, string> = {
  'locale-guard.js': 'text/javascript; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
}

const cache = new Map<string, { body: Buffer; type: string }>()

function load(name: string): { body: Buffer; type: string } | undefined {
  const known = cache.get(name)
  if (known) return known
  let entry: { body: Buffer; type: string } | undefined
  // Own keys only: `constructor`, `toString` or `__proto__` are on every object, and are no asset.
  if (Object.hasOwn(VENDOR, name)) {
    const vendor = VENDOR[name]!
    entry = { body: readFileSync(require.resolve(vendor.module)), type: vendor.type }
  } else if (Object.hasOwn(OWN, name)) {
    entry = { body: readFileSync(fileURLToPath(new URL(`./static/${name}`, import.meta.url))), type: OWN[name]! }
  }
  if (entry) cache.set(name, entry)
  return entry
}

const version = (() => {
  const pkg = (m: string) => (require(`${m}/package.json`) as { version: string }).version
  return `${pkg('@picocss/pico')}-${pkg('htmx.org')}-${pkg('uplot')}-${process.pid.toString(36)}`
})()

/** `/ui/assets/<name>?v=…` */
export function assetUrl(name: string): string {
  return `ui/assets/${name}?v=${version}`
}

export function registerAssetRoutes(app: H3): void {
  app.get('/ui/assets/:name', (event) => {
    const name = event.context.params?.name ?? ''
    const asset = load(name)
    if (!asset) throw new HTTPError({ status: 404, message: 'no such asset' })
    event.res.headers.set('content-type', asset.type)
    event.res.headers.set('cache-control', 'public, max-age=86400')
    event.res.headers.set('x-content-type-options', 'nosniff')
    return asset.body
  })
}
