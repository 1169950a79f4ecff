import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { localOrigin } from '../utils/local-origin.ts'
import { ALL_EVENTS, createSandbox, type Sandbox } from './index.ts'
import { DEMO_TENANTS } from './demo.ts'
import { workspaceKey } from '../config/workspace-key.ts'

/** `http://127.0.0.1:3000/sandbox` → `http://127.0.0.1:3000`: this server's own origin. */
const serverOrigin = (sandboxBase: string) => sandboxBase.replace(/\/sandbox\/?$/, '')

/**
 * Sandbox mode (no VOICE_API_KEY): the sandbox provider answers under `/sandbox`, and every demo agent
 * delivers its webhooks to this server's own receiver, signed with the first WEBHOOK_SECRET. Port and
 * secret are read at delivery time: the port is only known once the server listens.
 */
export function mountSandbox(app: H3, rt: Runtime): Sandbox | undefined {
  if (!rt.config.sandboxMode) return undefined
  const key = workspaceKey(rt.config)
  const workspaceTenant = DEMO_TENANTS.find((t) => t.apiKey === key)?.id
  const sandbox = createSandbox({
    clock: rt.clock,
    random: rt.random,
    speed: rt.config.sandbox.speed,
    faults: rt.config.sandbox.faults,
    rateLimit: rt.config.sandbox.rateLimit,
    numberLimit: rt.config.sandbox.numberLimit,
    maxCalls: rt.config.sandbox.maxCalls,
    log: rt.log.child({ component: 'sandbox' }),
    // Recording URLs (in conversations and webhooks) point at the proxy's /v1, the address clients are
    // told to use, not at the sandbox's own /sandbox/v1: as with the real provider, a recording_url is
    // fetched with the same base as every other call, and through the proxy it is cached.
    publicBaseUrl: () => serverOrigin(rt.config.upstreamBaseUrl),
    // Only the workspace's own agents: another demo tenant's calls (sk_test_globex) are another workspace's,
    // whose webhooks this switchboard would store and then fail to look up with its own key.
    webhookTargets: (_agentId, tenantId) => tenantId !== workspaceTenant ? [] : [
      {
        name: 'switchboard',
        // Where the server listens (HOST): one bound to ::1 alone refuses 127.0.0.1.
        url: `${localOrigin(rt.config.host, rt.config.port)}/webhooks/formant`,
        secret: rt.config.webhook.secrets[0],
        events: ALL_EVENTS,
        includeTranscript: true,
        includeRecordingUrl: true,
        active: true,
      },
    ],
  })
  app.mount('/sandbox', sandbox.app)
  rt.onClose(() => sandbox.close())
  return sandbox
}
