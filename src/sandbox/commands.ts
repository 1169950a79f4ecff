import { serveApp } from '../utils/serve-app.ts'
import { localOrigin } from '../utils/local-origin.ts'
import { resolveConfig } from '../config/file.ts'
import { CliError, defineCommand, intFlag } from '../cli-kit.ts'
import { secretProblem } from '../config/webhook-secret.ts'
import { createLogger } from '../utils/logger.ts'
import { waitForStopSignal } from '../utils/stop-signal.ts'
import { explainListenError } from '../utils/listen-error.ts'
import { printable } from '../utils/printable.ts'
import { DEMO_TENANTS } from './demo.ts'
import { ALL_EVENTS, createSandbox } from './index.ts'

/** `sandbox [--port N] [--host H] [--webhook-url U] [--webhook-secret S] [--webhook-key K]`: the sandbox provider alone. */
export const sandboxCommand = defineCommand({
  name: 'sandbox',
  usage: '[--port N] [--host H] [--webhook-url URL] [--webhook-secret S] [--webhook-key K]',
  summary: 'run the sandbox provider alone (the whole /v1 API with demo keys; webhooks to --webhook-url)',
  options: {
    port: { type: 'string', value: 'N', help: 'the port to listen on (default 4010; 0 picks a free one)' },
    host: { type: 'string', value: 'H', help: 'the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)' },
    'webhook-url': { type: 'string', value: 'URL', help: 'where the sandbox sends its signed webhooks, e.g. http://127.0.0.1:3000/webhooks/formant (default: none are sent)' },
    'webhook-secret': { type: 'string', checksEmpty: true, value: 'S', help: 'the whsec_… secret to sign them with (default: WEBHOOK_SECRET, the one switchboard verifies with)' },
    'webhook-key': { type: 'string', value: 'K', help: `the demo key whose workspace's calls send webhooks there, as the switchboard at --webhook-url uses it (default ${DEMO_TENANTS[0]!.apiKey})` },
  },
  examples: ['sandbox --port 4010 --webhook-url http://127.0.0.1:3000/webhooks/formant'],
  async run(ctx) {
    // The environment and switchboard.config.ts, as every command reads them (WEBHOOK_SECRET, SANDBOX_*). A
    // VOICE_API_KEY in either is not this command's business: the sandbox stands in for the provider.
    const config = await resolveConfig({ env: { ...ctx.env, VOICE_API_KEY: undefined }, file: { VOICE_API_KEY: undefined } })
    const port = intFlag(ctx.values, 'port', 4010)!
    if (port < 0 || port > 65535) throw new CliError('--port must be from 0 to 65535')
    const host = typeof ctx.values.host === 'string' ? ctx.values.host : '127.0.0.1'
    const webhookUrl = typeof ctx.values['webhook-url'] === 'string' ? ctx.values['webhook-url'] : undefined
    if (webhookUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(webhookUrl)) {
      throw new CliError(`--webhook-url must be an http(s) URL (got "${webhookUrl}")`)
    }
    if (ctx.values['webhook-secret'] === '') {
      // Usually `--webhook-secret "$WEBHOOK_SECRET"` with the variable unset: deliveries would go out unsigned
      // and the receiver would refuse every one.
      throw new CliError('--webhook-secret is empty (is the variable you passed set?); leave it out to use WEBHOOK_SECRET')
    }
    // One workspace's calls, as a provider's webhook targets are set on a workspace's agents: every demo workspace's
    // went to --webhook-url, and the switchboard there stored another workspace's calls, then failed its follow-ups
    // (agent not found) with its own key.
    const webhookKey = typeof ctx.values['webhook-key'] === 'string' ? ctx.values['webhook-key'] : DEMO_TENANTS[0]!.apiKey
    const webhookTenant = DEMO_TENANTS.find((t) => t.apiKey === webhookKey && !t.disabled)
    if (!webhookTenant) {
      throw new CliError(`--webhook-key must be a demo key with agents: ${DEMO_TENANTS.filter((t) => !t.disabled).map((t) => t.apiKey).join(' or ')} (got "${printable(webhookKey, 60)}")`)
    }
    const given = ctx.values['webhook-secret'] as string | undefined
    // Checked as WEBHOOK_SECRET is: a placeholder copied from an example, or a whsec_ secret that is not base64,
    // signs deliveries a switchboard configured the same way would be refused to start with.
    const problem = given === undefined ? undefined : secretProblem(given, 'formant')
    if (problem) throw new CliError(`--webhook-secret ${problem}`)
    // Without a URL nothing is sent: a secret or key given alone was taken without a word, and the user waited for
    // webhooks that never came.
    const alone = (['webhook-secret', 'webhook-key'] as const).find((flag) => ctx.values[flag] !== undefined)
    if (webhookUrl === undefined && alone) throw new CliError(`--${alone} is for the webhooks sent to --webhook-url, and none are sent without it: pass --webhook-url too`)
    const secret = given ?? config.webhook.secrets[0]
    if (webhookUrl !== undefined && !secret) {
      // switchboard verifies every webhook: unsigned ones would all be answered 401.
      throw new CliError('--webhook-url needs a secret to sign with: set WEBHOOK_SECRET (the one switchboard verifies with) or pass --webhook-secret')
    }
    // Listening for the stop signal from the start: a SIGTERM during start-up must still shut down cleanly.
    const signal = waitForStopSignal()
    try {
      let publicBase = ''
      const sandbox = createSandbox({
        speed: config.sandbox.speed,
        faults: config.sandbox.faults,
        rateLimit: config.sandbox.rateLimit,
        numberLimit: config.sandbox.numberLimit,
        maxCalls: config.sandbox.maxCalls,
        log: createLogger({ level: config.logLevel }),
        publicBaseUrl: () => publicBase,
        webhookTargets: (_agentId, tenantId) =>
          webhookUrl && tenantId === webhookTenant.id
            ? [{ name: 'default', url: webhookUrl, secret, events: ALL_EVENTS, includeTranscript: true, includeRecordingUrl: true, active: true }]
            : [],
      })
      const server = serveApp(sandbox.app, { port, hostname: host })
      try {
        await server.ready()
      } catch (error) {
        await sandbox.close()
        throw new CliError(explainListenError(error, { host, port }, { port: '--port', host: '--host' }).message, 1)
      }
      const address = server.node?.server?.address()
      const bound = typeof address === 'object' && address ? address.port : port
      publicBase = localOrigin(host, bound)
      const keys = DEMO_TENANTS.map((t) =>
        t.disabled ? `${t.apiKey} (disabled: 401)` : `${t.apiKey} (${t.agents.length === 1 ? 'agent' : 'agents'} ${t.agents.map((a) => a.id).join(', ')})`,
      ).join(' · ')
      ctx.write(
        [
          '',
          `  sandbox provider listening at ${publicBase}/v1   (speed ×${config.sandbox.speed})`,
          `    demo API keys   ${keys}`,
          webhookUrl
            ? `    webhooks        ${webhookTenant.apiKey}'s calls, every event type → ${webhookUrl} (signed: X-FormantAI-Signature)`
            : '    webhooks        none (pass --webhook-url to receive call events)',
          '',
          `    curl -s ${publicBase}/v1/call -H 'Authorization: Bearer sk_test_acme' -H 'Content-Type: application/json' \\`,
          `      -d '{"agent_id":101,"parameters":[{"name":"customer_phone","value":"+919876543210"}]}'`,
          '',
          '',
        ].join('\n'),
      )
      const received = await signal.stopped
      ctx.write(`\n${received}: sandbox stopping…\n`)
      await server.shutdown()
      await sandbox.close()
      ctx.write('sandbox stopped\n')
    } finally {
      signal.release()
    }
  },
})
