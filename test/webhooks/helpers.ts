import { H3 } from 'h3'
import type { Dialect } from '../../src/db/connect.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { registerWebhookRoutes, signFormant } from '../../src/webhooks/index.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

export const SECRET = 'whsec_test_secret'
export const START = '2026-03-01T10:00:00Z'

export interface Harness {
  rt: TestRuntime
  clock: ManualClock
  app: H3
  /** POSTs a body to a target with the given headers (in-process, through h3). */
  post(body: string | Uint8Array, headers?: Record<string, string>, target?: string): Promise<Response>
  /** POSTs an event signed the provider's way, timestamped now. */
  send(event: WebhookEvent | Record<string, unknown>, options?: { secret?: string; headers?: Record<string, string>; target?: string }): Promise<Response>
  close(): Promise<void>
}

export async function createHarness(dialect: Dialect, env: Record<string, string> = {}): Promise<Harness> {
  const clock = createManualClock(START)
  const rt = await createTestRuntime({ dialect, clock, env: { RECONCILE_INTERVAL_SECONDS: '0', ...env } })
  const app = new H3()
  registerWebhookRoutes(app, rt)
  const post = async (body: string | Uint8Array, headers: Record<string, string> = {}, target = 'formant') =>
    app.fetch(
      new Request(`http://localhost/webhooks/${target}`, {
        method: 'POST',
        body: typeof body === 'string' ? body : Buffer.from(body),
        headers: { 'content-type': 'application/json', ...headers },
      }),
    )
  return {
    rt,
    clock,
    app,
    post,
    send(event, options = {}) {
      const body = JSON.stringify(event)
      return post(
        body,
        {
          'x-formantai-signature': signFormant(body, options.secret ?? SECRET),
          'x-formantai-timestamp': String(Math.floor(clock.now() / 1000)),
          'x-formantai-event-id': String((event as { event_id?: unknown }).event_id ?? ''),
          ...options.headers,
        },
        options.target,
      )
    },
    close: () => rt.close(),
  }
}

let seq = 0
/** A provider-shaped event; `overrides.call` merges into data.call. */
export function makeEvent(
  overrides: { event_id?: string; event_type?: WebhookEvent['event_type']; timestamp?: string; call?: Partial<WebhookEvent['data']['call']>; data?: Partial<WebhookEvent['data']> } = {},
): WebhookEvent {
  seq++
  const type = overrides.event_type ?? 'call.completed'
  const status = type.slice('call.'.length)
  return {
    event_id: overrides.event_id ?? `evt_${seq.toString().padStart(6, '0')}`,
    event_type: type,
    timestamp: overrides.timestamp ?? '2026-03-01T09:59:00Z',
    data: {
      call: {
        agent_id: 101,
        call_parameters: { customer_phone: '+919876543210', name: 'Asha' },
        conversation_id: `conv-${seq}_1`,
        duration_seconds: status === 'completed' ? 42 : null,
        started_at: '2026-03-01T09:58:00Z',
        ended_at: '2026-03-01T09:58:42Z',
        failure_reason: status === 'completed' ? null : status,
        from_phone: '+918035550101',
        to_phone: '+919876543210',
        recording_url: null,
        status,
        trace_id: `0000000${seq}-0000-4000-8000-000000000000`,
        ...overrides.call,
      },
      results: { intent: 'pay_later' },
      retry: { attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null },
      retry_context: null,
      transcript: status === 'completed' ? 'BOT: Namaste, am I speaking with Asha?\nHUMAN: Yes — हाँ, बोलिए' : null,
      ...overrides.data,
    },
  }
}

export async function countEvents(rt: TestRuntime): Promise<number> {
  const { n } = await rt.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(n)
}

/** Environment for a CLI run (`main()`) against the harness's own store. */
export function cliEnv(rt: { store: { url: string }; dataDir: string }, extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: rt.store.url, DATA_DIR: rt.dataDir, WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', ...extra }
}

/** Runs the CLI in-process and captures its output. */
export async function runCli(argv: string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const { main } = await import('../../src/cli.ts')
  let out = ''
  let err = ''
  const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}
