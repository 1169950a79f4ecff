import { HTTPResponse, type H3, type H3Event } from 'h3'
import { apiErrorResponse } from '../upstream/api-error.ts'
import type { Runtime } from '../runtime.ts'
import type { WebhookTargetConfig } from '../config/schema.ts'
import { CommitDeadlineError, EventRefusedError, StorageUnavailableError, pendingRow } from './inbox.ts'
import { webhookMetrics } from './metrics.ts'
import { webhookState } from './state.ts'
import { verifyRequest, type SignedRequest } from './verify.ts'
import { campaignOfCall } from './event-campaign.ts'
import { DOCTOR_PROBE_ANSWER, isDoctorProbe } from './doctor-probe.ts'
import { mayHaveBeenForgotten, oldEnoughToBeForgotten, rememberedDays } from './forgotten-event.ts'
import { MAX_CONVERSATION_ID_LENGTH, MAX_EVENT_ID_LENGTH, MAX_EVENT_TYPE_LENGTH, MAX_TRACE_ID_LENGTH, checkId, isDotSegment, unstorableText, type IdCheck } from './storable.ts'
import { MAX_JSON_DEPTH, jsonNestedDeeperThan } from '../utils/json-depth.ts'
import { readLimited } from '../utils/read-limited.ts'
import { createLogThrottle, type LogThrottle } from '../utils/log-throttle.ts'
import { printable } from '../utils/printable.ts'
import { isUnreachableError } from '../db/open-error.ts'

export const DEFAULT_TARGET = 'formant'
/** Headers kept with each event for audit. Signatures are never stored. */
const AUDIT_HEADERS = [
  'content-type', 'content-length', 'user-agent', 'x-formantai-event-id', 'x-formantai-event-type', 'x-formantai-timestamp',
  'webhook-id', 'webhook-timestamp', 'x-request-id', 'x-forwarded-for',
]
const RETRY_AFTER_SECONDS = 5
/** Refusal log lines, per runtime: at most one a second per target and reason. */
const rejectionThrottles = new WeakMap<Runtime, LogThrottle>()

/** The target a path names: `formant` is the provider's default unless configured explicitly. */
export function resolveTarget(rt: Runtime, name: string): WebhookTargetConfig | undefined {
  // Own keys only: the targets are a plain object, and a path like /webhooks/toString must not find the
  // inherited method. One hasOwn check, no allocation: this runs on every delivery.
  const targets = rt.config.webhook.targets
  if (Object.hasOwn(targets, name)) return targets[name]
  if (name === DEFAULT_TARGET) return { scheme: 'formant', secrets: rt.config.webhook.secrets }
  return undefined
}

function errorResponse(status: number, type: string, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error: { message, type } }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  })
}

type BodyResult = { ok: true; body: Buffer } | { ok: false }

/** Reads the body up to `max` bytes, counting while it streams (a lying or absent Content-Length is not trusted). */
async function readBodyLimited(event: H3Event, max: number): Promise<BodyResult> {
  const declared = Number(event.req.headers.get('content-length') ?? '')
  if (Number.isFinite(declared) && declared > max) return { ok: false }
  const node = event.runtime?.node?.req
  if (node && !node.readableEnded && !node.destroyed && node.readable) {
    return new Promise<BodyResult>((resolve, reject) => {
      const chunks: Buffer[] = []
      let total = 0
      // Methods, not `const onData = () => …`: under tsx (esbuild's keepNames) every named arrow made per
      // request costs an Object.defineProperty of its name — several microseconds a request on this path.
      const listen = {
        data(chunk: Buffer) {
          total += chunk.length
          if (total > max) {
            listen.cleanup()
            node.resume() // drain the rest so the 413 can be written
            resolve({ ok: false })
            return
          }
          chunks.push(chunk)
        },
        end() {
          listen.cleanup()
          resolve({ ok: true, body: Buffer.concat(chunks, total) })
        },
        error(error: Error) {
          listen.cleanup()
          reject(error)
        },
        cleanup() {
          node.off('data', listen.data)
          node.off('end', listen.end)
          node.off('error', listen.error)
        },
      }
      node.on('data', listen.data)
      node.on('end', listen.end)
      node.on('error', listen.error)
    })
  }
  // Not on Node's server (a Fetch runtime, app.fetch in tests): the web stream, counted the same way.
  const read = await readLimited(event.req.body, max, { overflow: 'cancel' })
  return read.ok ? { ok: true, body: Buffer.from(read.bytes.buffer, read.bytes.byteOffset, read.bytes.byteLength) } : { ok: false }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The first of the candidates that is present (not blank); its check decides (a too-long id is refused, not skipped). */
function firstId(max: number, ...candidates: unknown[]): IdCheck {
  for (const c of candidates) {
    const check = checkId(c, max)
    if (check.ok || check.problem !== 'missing') return check
  }
  return { ok: false, problem: 'missing' }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

/** Handles one delivery: limit, verify over raw bytes, parse, commit durably, then answer. */
export async function receiveWebhook(rt: Runtime, event: H3Event, targetName: string): Promise<Response | HTTPResponse> {
  const started = performance.now()
  const metrics = webhookMetrics(rt.metrics)
  const { inbox } = webhookState(rt)
  let rejectionLogs = rejectionThrottles.get(rt)
  if (!rejectionLogs) rejectionThrottles.set(rt, (rejectionLogs = createLogThrottle(1_000)))
  const target = resolveTarget(rt, targetName)
  const label = target ? targetName : 'unknown'
  // Counted once it is known not to be doctor's probe (answered and counted nowhere, as the README says): on each way
  // out before that — a refusal, a body cut short — and after it. It was counted first, so every doctor run added a
  // delivery received that was neither accepted, a duplicate nor rejected.
  let counted = false
  const received = () => {
    if (counted) return
    counted = true
    metrics.received.inc({ target: label })
  }
  // Methods rather than named arrows: see readBodyLimited.
  const answer = {
    observe(outcome: string) {
      metrics.ingestSeconds.observe({ outcome }, (performance.now() - started) / 1000)
    },
    reject(status: number, reason: string, type: string, message: string, headers: Record<string, string> = {}) {
      received()
      metrics.rejected.inc({ target: label, reason })
      inbox.countRejection(label, reason, rt.clock.now())
      // One line a second per target and reason: refusals are counted in full above, and a flood of them (a scanner,
      // a misconfigured sender) must not fill the disk with identical lines.
      const { log, suppressed } = rejectionLogs.take(`${label}\0${reason}`, rt.clock.now())
      if (log) rt.log.warn({ target: label, reason, status, ...(suppressed ? { not_logged_since: suppressed } : {}) }, `webhook rejected: ${message}`)
      answer.observe('rejected')
      return errorResponse(status, type, message, headers)
    },
  }
  const reject = answer.reject
  const observe = answer.observe

  // The name comes from the URL: quoted short, whatever its length.
  if (!target) return reject(404, 'unknown_target', 'not_found', `no webhook target named "${printable(targetName, 64)}"`)

  let read: Awaited<ReturnType<typeof readBodyLimited>>
  try {
    read = await readBodyLimited(event, rt.config.webhook.maxBytes)
  } catch (error) {
    // The sender hung up before its body ended (its timeout, a dropped connection): nothing to store or answer, and
    // nothing wrong here — it sends again. Counted, and logged at info, not as the service's error.
    received()
    metrics.rejected.inc({ target: label, reason: 'aborted' })
    observe('aborted')
    rt.log.info({ target: label, err: (error as Error).message }, 'webhook delivery aborted by the sender before its body ended; it will be sent again')
    return errorResponse(400, 'invalid_request', 'the request body ended early')
  }
  if (!read.ok) {
    return reject(413, 'too_large', 'payload_too_large', `body is larger than ${rt.config.webhook.maxBytes} bytes`, { connection: 'close' })
  }
  const body = read.body
  const headers = event.req.headers
  const signed: SignedRequest = {
    header(name) {
      return headers.get(name) ?? undefined
    },
    body,
  }
  const verified = verifyRequest(signed, target, {
    toleranceSeconds: rt.config.webhook.toleranceSeconds,
    nowMs: rt.clock.now(),
    allowUnsigned: rt.config.webhook.allowUnsigned,
  })
  if (!verified.ok) return reject(401, verified.reason, 'authentication_error', verified.message)

  let parsed: Record<string, unknown> | undefined
  let text = ''
  let tooDeep = false
  let decoded = false
  try {
    text = utf8.decode(body)
    decoded = true
    tooDeep = jsonNestedDeeperThan(text)
    parsed = tooDeep ? undefined : record(JSON.parse(text))
  } catch {
    parsed = undefined
  }
  // Said as such: "body must be a JSON object" sent its sender looking for a JSON mistake in a body that had none.
  if (!decoded) return reject(400, 'invalid_utf8', 'invalid_request', 'body is not valid UTF-8')
  if (tooDeep) return reject(400, 'too_deep', 'invalid_request', `body is nested deeper than ${MAX_JSON_DEPTH} levels`)
  if (!parsed) return reject(400, 'invalid_json', 'invalid_request', 'body must be a JSON object')
  if (isDoctorProbe(parsed)) {
    rt.log.info({ target: label }, 'doctor probe answered: the webhook URL reaches this receiver and the signature matches')
    return new Response(DOCTOR_PROBE_ANSWER, { headers: { 'content-type': 'application/json' } })
  }
  received()
  const unstorable = unstorableText(text, parsed)
  if (unstorable?.problem === 'nul') {
    return reject(400, 'unstorable', 'invalid_request', `body contains U+0000 (a NUL character) at ${unstorable.at}, which cannot be stored; remove it`)
  }
  // The provider's timestamp header is not signed, so its tolerance stops no one re-sending a captured delivery; the
  // event id does, for as long as it is kept. Past that, the body's own (signed) creation time: asked of the database
  // only for an event that old, which the provider never sends (it retries for minutes).
  const created = target.scheme === 'formant' ? oldEnoughToBeForgotten(parsed.timestamp, rt.clock.now(), rt.config.webhook.retentionDays) : null
  if (created !== null && (await mayHaveBeenForgotten(rt.store.db, created).catch(() => false))) {
    return reject(401, 'stale_event', 'authentication_error', `event created ${String(parsed.timestamp)}, before the oldest events still kept (EVENT_RETENTION_DAYS, ${rememberedDays(rt.config.webhook.retentionDays)} days): a re-sent old delivery`)
  }
  // The dedupe key. On a Standard Webhooks target the signed `webhook-id` comes before the unsigned
  // X-FormantAI-Event-Id: a captured delivery re-sent within the tolerance with another unsigned id must
  // still be the same event.
  // An hmac target names the headers its sender puts them in (GitHub: X-GitHub-Delivery / X-GitHub-Event).
  const senderHeader = (name: string | undefined) => (name ? headers.get(name) : undefined)
  // The provider's X-FormantAI-* headers on its own scheme only: on another scheme they are no sender's, unsigned, and
  // the refusal below never named them (a Standard Webhooks body without `type` took the header's, said nowhere).
  const providerHeader = (name: string) => (target.scheme === 'formant' ? headers.get(name) : undefined)
  const idCheck =
    target.scheme === 'standard'
      ? firstId(MAX_EVENT_ID_LENGTH, parsed.event_id, headers.get('webhook-id'))
      : firstId(MAX_EVENT_ID_LENGTH, parsed.event_id, target.scheme === 'hmac' ? senderHeader(target.idHeader) : undefined, providerHeader('x-formantai-event-id'))
  if (!idCheck.ok && idCheck.problem === 'too_long') {
    return reject(400, 'event_id_too_long', 'invalid_request', `event id is longer than ${MAX_EVENT_ID_LENGTH} characters`)
  }
  if ((!idCheck.ok && idCheck.problem === 'malformed') || (idCheck.ok && isDotSegment(idCheck.value))) {
    return reject(400, 'event_id_malformed', 'invalid_request', 'event id must be well-formed text (no half of a surrogate pair) and not "." or ".."')
  }
  if (!idCheck.ok && idCheck.problem === 'imprecise') {
    return reject(400, 'event_id_imprecise', 'invalid_request', 'event id is a number JSON cannot carry exactly (not a whole number below 2^53): send it as a string')
  }
  if (!idCheck.ok) return reject(400, 'missing_event_id', 'invalid_request', `event id missing: send ${whereFrom(target, 'id')}`)
  // The body (signed on every scheme) before any header; a Standard Webhooks body says its type in `type`.
  const typeCheck = firstId(
    MAX_EVENT_TYPE_LENGTH,
    parsed.event_type,
    target.scheme === 'standard' ? parsed.type : undefined,
    target.scheme === 'hmac' ? senderHeader(target.typeHeader) : undefined,
    providerHeader('x-formantai-event-type'),
  )
  if (!typeCheck.ok && typeCheck.problem === 'imprecise') return reject(400, 'invalid_event_type', 'invalid_request', 'event type must be text')
  if (!typeCheck.ok && typeCheck.problem === 'malformed') return reject(400, 'invalid_event_type', 'invalid_request', 'event type must be well-formed text (no half of a surrogate pair)')
  if (!typeCheck.ok && typeCheck.problem === 'too_long') {
    return reject(400, 'event_type_too_long', 'invalid_request', `event type is longer than ${MAX_EVENT_TYPE_LENGTH} characters`)
  }
  if (!typeCheck.ok) return reject(400, 'missing_event_type', 'invalid_request', `event type missing: send ${whereFrom(target, 'type')}`)
  const eventId = idCheck.value
  const eventType = typeCheck.value

  const call = record(record(parsed.data)?.call)
  const conversationId = typeof call?.conversation_id === 'string' ? call.conversation_id : null
  const traceId = typeof call?.trace_id === 'string' ? call.trace_id : null
  if (conversationId !== null && conversationId.length > MAX_CONVERSATION_ID_LENGTH) {
    return reject(400, 'conversation_id_too_long', 'invalid_request', `data.call.conversation_id is longer than ${MAX_CONVERSATION_ID_LENGTH} characters`)
  }
  if (traceId !== null && traceId.length > MAX_TRACE_ID_LENGTH) {
    return reject(400, 'trace_id_too_long', 'invalid_request', `data.call.trace_id is longer than ${MAX_TRACE_ID_LENGTH} characters`)
  }
  if (conversationId !== null && !conversationId.isWellFormed()) {
    return reject(400, 'conversation_id_malformed', 'invalid_request', 'data.call.conversation_id must be well-formed text (no half of a surrogate pair)')
  }
  if (traceId !== null && !traceId.isWellFormed()) {
    return reject(400, 'trace_id_malformed', 'invalid_request', 'data.call.trace_id must be well-formed text (no half of a surrogate pair)')
  }
  // Indexed in the read model as the ids are (a status of 3,000 characters failed the event until dead on Postgres);
  // a call's status is a word, and its event type (`call.<status>`) is held to the same length.
  if (typeof call?.status === 'string' && call.status.length > MAX_EVENT_TYPE_LENGTH) {
    return reject(400, 'status_too_long', 'invalid_request', `data.call.status is longer than ${MAX_EVENT_TYPE_LENGTH} characters`)
  }
  // After the ids, whose own checks name the field.
  if (unstorable?.problem === 'lone_surrogate') {
    return reject(400, 'unstorable', 'invalid_request', `body contains half of a UTF-16 surrogate pair (an unpaired \\ud800–\\udfff escape) at ${unstorable.at}, which cannot be stored; send whole characters`)
  }
  const agentId = typeof call?.agent_id === 'number' && Number.isSafeInteger(call.agent_id) ? call.agent_id : null
  const audit: Record<string, string> = {}
  for (const name of AUDIT_HEADERS) {
    const value = headers.get(name)
    if (value !== null) audit[name] = value
  }
  const now = rt.clock.now()
  let duplicate: boolean
  try {
    ;({ duplicate } = await inbox.commit(
      pendingRow(
        {
          event_id: eventId,
          target: targetName,
          event_type: eventType,
          conversation_id: conversationId,
          trace_id: traceId,
          agent_id: agentId,
          body: text,
          headers: JSON.stringify(audit),
          source: 'webhook',
        },
        now,
      ),
    ))
  } catch (error) {
    if (error instanceof EventRefusedError) return reject(400, 'unstorable', 'invalid_request', error.message)
    const full = error instanceof StorageUnavailableError && error.reason === 'full'
    const message = error instanceof StorageUnavailableError || error instanceof CommitDeadlineError ? error.message : `storage error: ${(error as Error).message}`
    const reason = full ? 'storage_full' : 'storage_unavailable'
    metrics.rejected.inc({ target: label, reason })
    const probeSees = !full && (error instanceof CommitDeadlineError || (error instanceof StorageUnavailableError && isUnreachableError(error.cause)))
    webhookState(rt).storageTrouble = { at: rt.clock.now(), error: full ? 'storage is full' : message, probeSees }
    if (full) metrics.storageFull.set(1)
    // One line a second while it lasts (every delivery is counted): a full disk must not also fill the log's.
    const { log, suppressed } = rejectionLogs.take(`\0${reason}`, rt.clock.now())
    const more = suppressed ? { not_logged_since: suppressed } : {}
    if (log && full) rt.log.error({ event_id: eventId, err: message, ...more }, 'storage is full: free disk space (or raise the database size cap); webhooks are answered 503 until then')
    else if (log) rt.log.error({ event_id: eventId, conversation_id: conversationId, trace_id: traceId, agent_id: agentId, campaign: campaignOfCall(call), err: message, ...more }, 'webhook not stored; answered 503')
    observe('unavailable')
    return errorResponse(503, 'unavailable', full ? 'storage is full; retry later' : 'storage is unavailable; retry later', { 'retry-after': String(RETRY_AFTER_SECONDS) })
  }
  metrics.storageFull.set(0)
  webhookState(rt).storageTrouble = undefined
  // The provider's checklist: trace_id, agent_id, conversation_id and the campaign on every line about an event.
  const log = { event_id: eventId, event_type: eventType, conversation_id: conversationId, trace_id: traceId, agent_id: agentId, campaign: campaignOfCall(call), target: targetName }
  if (duplicate) {
    metrics.duplicates.inc({ target: label })
    rt.log.info(log, 'duplicate webhook acknowledged')
    observe('duplicate')
    return new HTTPResponse(null, { status: 204, headers: { 'x-switchboard-duplicate': 'true' } })
  }
  metrics.accepted.inc({ target: label })
  rt.log.info(log, 'webhook stored')
  observe('accepted')
  // An h3 HTTPResponse goes straight to the Node response; a web Response costs a conversion.
  return new HTTPResponse(null, { status: 204 })
}

/** Where this target reads an event's id or type, for the 400 that says it found none. */
function whereFrom(target: WebhookTargetConfig, what: 'id' | 'type'): string {
  const field = what === 'id' ? 'event_id' : 'event_type'
  if (target.scheme === 'standard') return what === 'id' ? 'a webhook-id header (or event_id in the body)' : 'type (or event_type) in the body'
  if (target.scheme === 'hmac') {
    const header = what === 'id' ? target.idHeader : target.typeHeader
    return `${field} in the body${header ? ` or a ${header} header` : ''}`
  }
  return `${field} in the body or an X-FormantAI-Event-${what === 'id' ? 'Id' : 'Type'} header`
}

/** `POST /webhooks/formant` (the provider's default target) and `POST /webhooks/:target`. */
export function registerReceiverRoutes(app: H3, rt: Runtime): void {
  app.post('/webhooks/:target', (event) => receiveWebhook(rt, event, event.context.params?.target ?? ''))
  // The URL opened in a browser (a GET) to see that it is there: a 404 "no route" read as a wrong URL. It is there, and
  // takes POST only (RFC 9110: 405 with Allow).
  app.all('/webhooks/:target', (event) =>
    apiErrorResponse(405, 'invalid_request', `the webhook URL takes signed POSTs from the provider only (got ${event.req.method}); it is there — doctor checks it end to end`, { headers: { allow: 'POST' } }),
  )
}
