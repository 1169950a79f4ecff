import { expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { renderBanner } from '../../src/server.ts'

// Outside sandbox mode the banner said to paste http://127.0.0.1:<port>/webhooks/formant into the provider dashboard,
// which refuses local-only URLs (README → The webhook URL): what goes there is the public HTTPS address in front.
it("the banner with a real provider names where switchboard listens, and says the provider's dashboard takes the public address", () => {
  const config = loadConfig({ env: { VOICE_API_KEY: 'sk_live_x', WEBHOOK_SECRET: 'whsec_dGVzdF9zZWNyZXRfdGVzdF9zZWNyZXQ=', DATA_DIR: '/nonexistent/sb', SWITCHBOARD_CONFIG: 'none' } })
  const banner = renderBanner(config, 'http://127.0.0.1:3000')
  expect(banner).toMatch(/^ {4}webhook receiver {4}http:\/\/127\.0\.0\.1:3000\/webhooks\/formant {3}\(verified with /m)
  expect(banner).toContain("in the provider dashboard: https://<your-host>/webhooks/formant, your reverse proxy's public address for this one (README → The webhook URL for the provider dashboard)")
  expect(banner).not.toContain('paste this URL')
})
