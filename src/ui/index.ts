import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { registerAssetRoutes } from './assets.ts'
import { html } from './html.ts'
import { registerLoginRoutes } from './login.ts'
import { registerPages } from './pages.ts'
import { setPageHeaders } from './security-headers.ts'

/**
 * The dashboard at `/ui`: server-rendered pages over the same queries as the CLI and the report, assets
 * from node_modules, login and CSRF (the gate in gate.ts runs before all of it).
 */
export function registerUi(app: H3, rt: Runtime): void {
  registerAssetRoutes(app)
  registerLoginRoutes(app, rt)
  registerPages(app, rt)
  // Relative links, as on every dashboard page: they hold under a reverse proxy's path prefix (root-relative.ts).
  app.get('/', (event) => {
    setPageHeaders(event)
    event.res.headers.set('content-type', 'text/html; charset=utf-8')
    return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>switchboard</title></head>
<body><main><h1>switchboard</h1><ul><li><a href="ui">Dashboard</a></li><li><a href="healthz">Health</a></li><li><a href="readyz">Readiness</a></li><li><a href="metrics">Metrics</a></li></ul></main></body></html>`.value
  })
}
