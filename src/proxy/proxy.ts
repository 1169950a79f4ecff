import { printable } from '../utils/printable.ts'
import { basename } from 'node:path'
import { HTTPResponse } from 'h3'
import { earlierAttempt, placeCall, STALE_PENDING_MS } from '../calls/place-call.ts'
import type { CallRecord } from '../calls/record.ts'
import { DncFileError, isBlocked } from '../campaigns/dnc.ts'
import { screenBatchUpload } from './batch-upload.ts'
import { continuedCampaign } from '../calls/continued-campaign.ts'
import { tenantOf } from '../calls/tenant.ts'
import { validateCallRequest } from '../calls/validate-call.ts'
import type { Runtime } from '../runtime.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import type { CallRequest } from '../upstream/schemas.ts'
import { readLimited } from '../utils/read-limited.ts'
import { timeOrderedId } from '../utils/time-ordered-id.ts'
import { providerFreshnessMs, requestCachePolicy } from './cache-control.ts'
import { CACHE_TTL_MS, planCache } from './cache-policy.ts'
import { cacheKey } from './cache-key.ts'
import { createJsonCache, forgetTenantNotFound, invalidateTenantLists, type CacheEntry } from './json-cache.ts'
import { applyIdempotencyHeader } from './idempotency-header.ts'
import { withHead } from './allow-header.ts'
import { parseJsonBody } from './json-body.ts'
import { errorFromVoiceApi, invalidAnswer, parseJson, readAnswer, type TextAnswer } from './error-answer.ts'
import { createIdleDeadline } from './idle-deadline.ts'
import { ageSeconds } from './age.ts'
import { currentGeneration } from './invalidation-marks.ts'
import { entryHeaders, markedHeaders, mayServeStale } from './revalidation-mark.ts'
import { createRecordingCache } from './recordings.ts'
import { matchRoute, type ProxyRoute } from './routes-table.ts'
import { createSingleFlight } from './single-flight.ts'
import { proxyCoalesced } from './metrics.ts'
import { streamThrough } from './stream-through.ts'
import { createTenantKeys } from './tenant-keys.ts'
import { failureResponse, fetchUpstream, isRateLimitHeader, NULL_BODY_STATUSES, passHeaders, storableHeaders, withCache, type CacheStatus } from './upstream.ts'

/** JSON request bodies (POST /v1/call) larger than this are refused before parsing. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024

/**
 * How long POST /v1/call may hold its caller, retries included. Four attempts of UPSTREAM_TIMEOUT_MS and the
 * backoff came to about a minute, past the 30 s many HTTP clients give up at: a client that gave up first never
 * saw X-Idempotency-Key and retried with a fresh key, placing the call twice. Within this it gets the answer,
 * or the last error with the key to retry with.
 */
export const CALL_BUDGET_MS = 25_000

export interface Proxy {
  /** Answers one request under /v1. */
  handle(request: Request, url?: URL): Promise<ProxyReply>
  /** Sweeps expired entries and enforces both byte budgets. */
  maintain(): Promise<void>
  /** Writes pending LRU touches (called on close). */
  flush(): Promise<void>
}

/** What one upstream GET came to, shared by every request that joined it (each answers from its own copy). */
type Fetched = ({ ok: true } & TextAnswer) | { ok: false; failure: 'unreachable' | 'timeout'; message: string }

function bearer(header: string | null): string | undefined {
  const match = header ? /^\s*Bearer\s+(\S+)\s*$/i.exec(header) : null
  return match?.[1]
}

/** Same query, same entry: parameters sorted, so `?offset=0&limit=5` and `?limit=5&offset=0` share one. */
function canonicalQuery(params: URLSearchParams): string {
  if (params.size === 0) return ''
  const copy = new URLSearchParams(params)
  copy.sort()
  return copy.toString()
}

/**
 * Text answers are h3 HTTPResponses rather than web Responses: h3 hands their string body to the Node
 * response directly instead of pumping a ReadableStream, which is most of the cost of a cache HIT.
 */
export type ProxyReply = Response | HTTPResponse

function fromEntry(entry: CacheEntry, cache: CacheStatus, method: string, now: number): HTTPResponse {
  const { headers } = entryHeaders(entry)
  headers.set('x-cache', cache)
  headers.set('age', String(ageSeconds(entry, now)))
  return textReply(method, entry.body, entry.status, headers, cache)
}

/**
 * A text answer to a GET or HEAD. A HEAD gets every header the GET would, its Content-Length too (RFC 9110 §9.3.2):
 * with no body to measure, the server would send none.
 */
function textReply(method: string, body: string, status: number, headers: Headers, cache: CacheStatus): HTTPResponse {
  headers.set('x-cache', cache)
  if (method !== 'HEAD') return new HTTPResponse(body, { status, headers })
  if (!NULL_BODY_STATUSES.has(status)) headers.set('content-length', String(Buffer.byteLength(body)))
  return new HTTPResponse(null, { status, headers })
}

/** The provider's answer to a missing or refused key, given locally (no key, or one it refused moments ago). */
function refusedKey(): Response {
  return withCache(apiErrorResponse(401, 'authentication_error', 'invalid or missing api key'), 'BYPASS')
}

/**
 * A read sent with `Cache-Control: only-if-cached` that the cache cannot answer (nothing fresh kept, or a key not
 * confirmed lately): 504, as RFC 9111 §5.2.1.7 says, in the provider's error shape the proxy's other 504 has — the
 * provider is not asked, for the answer or the key.
 */
function notCached(): Response {
  return withCache(apiErrorResponse(504, 'internal_error', 'only-if-cached: switchboard holds no fresh answer to this request that it may serve to this key, and did not ask the provider'), 'BYPASS')
}

/** A failure of switchboard itself (the database, a bug): logged, and answered without its details. */
function unexpectedFailure(rt: Runtime, error: unknown, path: string | undefined): Response {
  rt.log.error({ err: error, path }, 'proxy request failed')
  return withCache(apiErrorResponse(500, 'internal_error', 'switchboard could not answer this request; see its logs'), 'BYPASS')
}

/**
 * The drop-in /v1 proxy: same paths, methods, bodies and errors as the provider, with a tenant-safe
 * cache in front of the reads and the calls ledger behind POST /v1/call.
 */
export function createProxy(rt: Runtime): Proxy {
  const json = createJsonCache(rt)
  const recordings = createRecordingCache(rt)
  const keys = createTenantKeys(rt)

  /** Learns from any upstream answer whether the key is good. 429 and 5xx say nothing about it. */
  async function learn(tenant: string, status: number): Promise<void> {
    if (status === 401) await keys.rejected(tenant)
    else if (status < 500 && status !== 429) await keys.accepted(tenant)
  }

  /** Re-confirms a key with the cheapest request there is (given up after `timeoutMs`, UPSTREAM_TIMEOUT_MS by default: unknown). */
  async function confirm(apiKey: string, tenant: string, timeoutMs?: number): Promise<'accepted' | 'rejected' | 'unknown'> {
    const signal = timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }
    const result = await fetchUpstream(rt, { method: 'GET', pathAndQuery: '/v1/conversations?limit=1', apiKey, ...signal })
    if (!result.ok) return 'unknown'
    await result.response.body?.cancel().catch(() => {})
    await learn(tenant, result.response.status)
    if (result.response.status === 401) return 'rejected'
    return result.response.status < 500 && result.response.status !== 429 ? 'accepted' : 'unknown'
  }

  /**
   * Before an answer that tells what the do-not-call list holds (a call or a batch row refused for a listed number):
   * only a key the provider accepts learns it — confirmed lately, or now with the cheapest request. A made-up key got
   * the refusal all the same, and could probe which numbers the team's list holds. Undefined when the answer may go;
   * otherwise the 401 (a key the provider refuses) or the 502 (it cannot be asked, and never accepted this key).
   */
  async function unlessKeyAccepted(apiKey: string, tenant: string): Promise<Response | undefined> {
    if (await keys.isConfirmed(tenant)) return undefined
    const answer = await confirm(apiKey, tenant)
    if (answer === 'rejected') return refusedKey()
    if (answer === 'unknown' && !(await keys.wasEverAccepted(tenant))) return failureResponse({ failure: 'unreachable', message: 'cannot confirm the api key with the provider' })
    return undefined
  }

  /**
   * Before a write reads its body or records anything: true for a key the provider refuses — refused lately (not asked
   * again), or asked now with one read when it has not accepted it lately. A provider that cannot say (down, 429) is
   * no refusal: the write goes on and meets the provider's own answer.
   */
  async function refusedBeforeWrite(apiKey: string, tenant: string, timeoutMs?: number): Promise<boolean> {
    if (await keys.isConfirmed(tenant)) return false
    return keys.recentlyRefused(tenant) || (await confirm(apiKey, tenant, timeoutMs)) === 'rejected'
  }

  /**
   * Identical misses in flight at once share one upstream request (keyed by the cache key, so never across
   * tenants). Neither the requests joined to it nor the one that started it can cancel it: it belongs to none.
   */
  const flights = createSingleFlight<Fetched>({ onJoin: () => proxyCoalesced(rt.metrics).inc() })

  /**
   * Asks upstream for a GET, learns from the answer about the key, and caches it as the policy says — unless the
   * caller said no-store (`store` false) or the provider's Cache-Control forbids it.
   */
  async function fetchForCache(url: URL, route: ProxyRoute, apiKey: string, tenant: string, key: string, store: boolean): Promise<Fetched> {
    // Read before asking: an invalidation after this point may announce a change the answer predates.
    const since = await currentGeneration(rt.store.db)
    const result = await fetchUpstream(rt, { method: 'GET', pathAndQuery: url.pathname + url.search, apiKey })
    if (!result.ok) return result
    const upstream = result.response
    let text: string
    try {
      text = await upstream.text()
    } catch (error) {
      return { ok: false, failure: (error as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable', message: `the provider's answer was cut off (${(error as Error).message})` }
    }
    const parsed = parseJson(text)
    // A 2xx that is not JSON (cut off, a gateway's page) is the provider failing: a 502 (STALE when a copy is kept),
    // never kept, and nothing learned about the key from it.
    if (upstream.status >= 200 && upstream.status < 300 && parsed === undefined && !NULL_BODY_STATUSES.has(upstream.status)) {
      return { ok: true, ...invalidAnswer(upstream.status, upstream.headers, rt.clock.now()) }
    }
    await learn(tenant, upstream.status)
    const { storable, ...answer } = readAnswer(upstream.status, upstream.headers, text, rt.clock.now())
    const planned = parsed === undefined ? undefined : planCache(route, upstream.status, parsed, url.searchParams)
    // An answer that would replace the entry, marked no-store by the provider: the one kept before it goes too, or it
    // would be served in its place — a HIT until it expires, STALE for a day after. (An error marked so, a gateway's
    // 503, replaces nothing: the copy stays, to answer STALE.)
    if (planned && !storable) await json.remove(key).catch((err: unknown) => rt.log.warn({ err, path: url.pathname }, 'proxy cache removal failed'))
    // The provider's s-maxage (else max-age) shortens the table's TTL, never lengthens it; the entry is kept past it
    // all the same, to answer STALE.
    const freshness = providerFreshnessMs(upstream.headers)
    const plan = !planned || !store || !storable ? undefined : freshness !== undefined && freshness < planned.ttlMs ? { ...planned, ttlMs: freshness } : planned
    if (plan) {
      // The answer is good whether or not it could be kept: a failed write costs a later miss, not this answer.
      await json
        .put({ key, tenant, plan, status: answer.status, headers: markedHeaders(storableHeaders(answer.headers), upstream.headers), body: answer.text, since })
        .catch((err: unknown) => rt.log.warn({ err, path: url.pathname }, 'proxy cache write failed'))
    }
    return { ok: true, ...answer }
  }

  async function cachedGet(request: Request, url: URL, route: ProxyRoute, apiKey: string, tenant: string): Promise<ProxyReply> {
    const key = cacheKey(tenant, `${url.pathname}?${canonicalQuery(url.searchParams)}`)
    // A caller's no-cache (or max-age=0) or no-store asks the provider (RFC 9111 §5.2.1): no-cache then refreshes the
    // entry, no-store keeps nothing (BYPASS); max-age=N asks it when the entry is older. Each still gets the kept copy,
    // STALE, when the provider fails. With only-if-cached it takes a fresh entry (no-store does not forbid one) or a 504,
    // never the provider (no-cache, or max-age=0, asked for an answer only the provider can give).
    const { mode, maxAgeSeconds, onlyIfCached } = requestCachePolicy(request.headers)
    const entry = await json.get(key)
    const now = rt.clock.now()
    const youngEnough = (found: CacheEntry) => maxAgeSeconds === undefined || ageSeconds(found, now) <= maxAgeSeconds
    const fromCache = mode === 'default' || (onlyIfCached && mode === 'no-store')
    if (fromCache && entry && entry.expires_at > now && youngEnough(entry) && (await keys.isConfirmed(tenant))) {
      json.touch(key)
      return fromEntry(entry, 'HIT', request.method, rt.clock.now())
    }
    if (onlyIfCached) return notCached()
    // An expired entry the provider marked must-revalidate (proxy-revalidate, s-maxage) is not served STALE: its error
    // passes through as a MISS, a failure to reach it is the 502/504 of a read with nothing kept.
    const stale = async () =>
      entry && mayServeStale(entry, rt.clock.now()) && (await keys.wasEverAccepted(tenant)) ? fromEntry(entry, 'STALE', request.method, rt.clock.now()) : undefined
    // A no-store read shares only with its like: it must neither keep an answer nor leave others' unkept.
    const flight = mode === 'no-store' ? `${key}#no-store` : key
    const fetched = await flights.run(flight, () => fetchForCache(url, route, apiKey, tenant, key, mode !== 'no-store'))
    if (!fetched.ok) return (await stale()) ?? failureResponse(fetched)
    // A 429 too: the provider will not answer this key now, which is when the kept copy matters most — a fresh entry
    // asked upstream only to confirm the key got the 429 and nothing (a recording in the same state is served STALE).
    if (fetched.status >= 500 || fetched.status === 429) {
      const served = await stale()
      if (served) {
        // The provider did answer, just now: its back-off (Retry-After, X-RateLimit-*) goes with the stale copy.
        for (const [name, value] of fetched.headers) if (isRateLimitHeader(name)) served.headers.set(name, value)
        return served
      }
    }
    return textReply(request.method, fetched.text, fetched.status, new Headers(fetched.headers), mode === 'no-store' ? 'BYPASS' : 'MISS')
  }

  /** After a write of this tenant: its lists are stale, and a request from now on must not join a read that began before. */
  async function invalidateLists(tenant: string, kinds: Array<'conversation_list' | 'batch_list'>): Promise<void> {
    await invalidateTenantLists(rt, tenant, kinds)
    flights.forget(`${tenant}:`)
  }

  async function recording(request: Request, url: URL, id: string, apiKey: string, tenant: string): Promise<ProxyReply> {
    // A recording asked for with a query (a format, a signed handle) is not the file the cache keeps under the
    // conversation: it goes to the provider as asked, and its answer back as sent. With only-if-cached, what the cache
    // holds or a 504: the key is not confirmed with the provider either.
    const { onlyIfCached } = requestCachePolicy(request.headers)
    if (url.search !== '') return onlyIfCached ? notCached() : streamThrough(rt, request, { apiKey, pathAndQuery: url.pathname + url.search })
    const cached = await recordings.lookup(tenant, id)
    if (cached) {
      let status: CacheStatus = 'HIT'
      if (!(await keys.isConfirmed(tenant))) {
        if (onlyIfCached) return notCached()
        const answer = await confirm(apiKey, tenant)
        if (answer === 'rejected') return refusedKey()
        if (answer === 'unknown') {
          if (!(await keys.wasEverAccepted(tenant))) return failureResponse({ failure: 'unreachable', message: 'cannot confirm the api key with the provider' })
          status = 'STALE'
        }
      }
      if (status === 'HIT') recordings.touch(cached.key)
      const answer = await recordings.respond(cached, request, status)
      // Undefined: the file went since the lookup (evicted meanwhile); it is downloaded again below.
      if (answer) return answer
    }
    // A missing recording stays a 404, cached briefly like any other.
    const notFoundKey = cacheKey(tenant, `${url.pathname}?`)
    const notFound = await json.get(notFoundKey)
    if (notFound && notFound.expires_at > rt.clock.now() && (await keys.isConfirmed(tenant))) return fromEntry(notFound, 'HIT', request.method, rt.clock.now())
    if (onlyIfCached) return notCached()
    const since = await currentGeneration(rt.store.db)
    // UPSTREAM_TIMEOUT_MS for the headers, then as an idle timeout: a whole recording may take longer.
    const deadline = createIdleDeadline(rt.config.upstreamTimeoutMs)
    deadline.arm()
    let handedOver = false
    try {
      // The file as it is (audio is compressed already): fetch would ask for gzip by itself, and a provider or CDN that
      // sent it made the announced length the compressed one — every download cut short, HEAD and Range wrong.
      const result = await fetchUpstream(rt, { method: 'GET', pathAndQuery: url.pathname, apiKey, headers: { accept: '*/*', 'accept-encoding': 'identity' }, signal: deadline.signal })
      if (!result.ok) {
        if (notFound && mayServeStale(notFound, rt.clock.now()) && (await keys.wasEverAccepted(tenant))) return fromEntry(notFound, 'STALE', request.method, rt.clock.now())
        return failureResponse(result)
      }
      const upstream = result.response
      deadline.arm()
      await learn(tenant, upstream.status)
      if (upstream.status === 200 && upstream.body) {
        // The caller gets the bytes as they arrive; the cache keeps the file once the download ended whole.
        const response = await recordings.passThrough({ tenant, conversationId: id, request, upstream, body: deadline.watch(upstream.body), done: () => deadline.stop() })
        handedOver = true
        // passThrough chose the type (the file's, JSON for its 416, none for its 304); the provider's rate-limit headers join it.
        const type = response.headers.get('content-type')
        passHeaders(upstream.headers, upstream.status, response.headers)
        if (type !== null) response.headers.set('content-type', type)
        else response.headers.delete('content-type')
        return response
      }
      const text = await upstream.text().catch(() => '')
      const { storable, ...answer } = readAnswer(upstream.status, upstream.headers, text, rt.clock.now())
      if (upstream.status === 404 && !storable) await json.remove(notFoundKey).catch((err: unknown) => rt.log.warn({ err, path: url.pathname }, 'proxy cache removal failed'))
      if (upstream.status === 404 && storable) {
        await json.put({ key: notFoundKey, tenant, plan: { kind: 'not_found', ttlMs: CACHE_TTL_MS.notFound, resourceId: id, agentId: null }, status: 404, headers: markedHeaders(storableHeaders(answer.headers), upstream.headers), body: answer.text, since })
      }
      return textReply(request.method, answer.text, answer.status, answer.headers, 'MISS')
    } finally {
      if (!handedOver) deadline.stop()
    }
  }

  async function createCall(request: Request, apiKey: string, tenant: string): Promise<ProxyReply> {
    const type = request.headers.get('content-type') ?? ''
    if (!/^application\/(.+\+)?json\b/i.test(type.trim())) return withCache(apiErrorResponse(400, 'invalid_request', 'Content-Type must be application/json'), 'BYPASS')
    // A gzip body was read as text and refused as "not valid UTF-8 (invalid byte 0x8b …)": the encoding is what is wrong.
    const encoding = request.headers.get('content-encoding')?.trim().toLowerCase()
    if (encoding && encoding !== 'identity') {
      return withCache(apiErrorResponse(415, 'invalid_request', `Content-Encoding "${printable(encoding, 40)}" is not taken for POST /v1/call: send the JSON body uncompressed`, { headers: { 'accept-encoding': 'identity' } }), 'BYPASS')
    }
    const tooLarge = (headers?: HeadersInit) =>
      withCache(apiErrorResponse(413, 'invalid_request', `request body is larger than ${MAX_JSON_BODY_BYTES} bytes`, { headers }), 'BYPASS')
    const declared = Number(request.headers.get('content-length') ?? 0)
    // Closed after the 413, as below: the client stops sending the body it declared.
    if (declared > MAX_JSON_BODY_BYTES) return tooLarge({ connection: 'close' })
    let read: Awaited<ReturnType<typeof readLimited>>
    try {
      read = await readLimited(request.body, MAX_JSON_BODY_BYTES)
    } catch (error) {
      // The client hung up before its body ended (its timeout, a dropped connection): nothing was placed and no one
      // reads the answer. Logged at info, as the receiver does — not as switchboard's own failure.
      rt.log.info({ path: '/v1/call', err: (error as Error).message }, 'call request aborted by the client before its body ended; nothing was placed')
      return withCache(apiErrorResponse(400, 'invalid_request', 'the request body ended early'), 'BYPASS')
    }
    // The rest of the body is being drained unread: closing the connection after the 413 bounds that.
    if (!read.ok) return tooLarge({ connection: 'close' })
    const parsed = parseJsonBody(read.bytes)
    if (!parsed.ok) return withCache(apiErrorResponse(400, 'invalid_request', parsed.message), 'BYPASS')
    const keyed = applyIdempotencyHeader(parsed.value, request.headers.get('idempotency-key'))
    if (!keyed.ok) return withCache(apiErrorResponse(400, 'invalid_request', keyed.message), 'BYPASS')
    const checked = validateCallRequest(keyed.body, rt.clock.now())
    if (!checked.ok) return withCache(apiErrorResponse(400, 'invalid_request', checked.message), 'BYPASS')
    // A retry with the key of a call already placed is told so (409, as the provider would) before anything else is
    // looked at: a number put on the do-not-call list since — by that very call's result, say — answered the retry
    // "not called", and a client that had timed out concluded the call never happened.
    const earlier = checked.request.idempotency_key
      ? await earlierAttempt(rt.store.db, { tenant: tenantOf(apiKey), agent_id: checked.request.agent_id, idempotency_key: checked.request.idempotency_key }, rt.clock.now())
      : undefined
    if (earlier && 'duplicate' in earlier) {
      const reply = duplicateAnswer(earlier.duplicate)
      reply.headers.set('x-idempotency-key', checked.request.idempotency_key!)
      return reply
    }
    // The do-not-call list is checked before every call switchboard places, its own or one sent through it.
    const phone = checked.request.parameters.find((p) => p.name === 'customer_phone')?.value
    let blocked: boolean
    try {
      blocked = phone !== undefined && (await isBlocked(rt, phone))
    } catch (error) {
      if (!(error instanceof DncFileError)) throw error
      // No call is placed while the list cannot be read; the caller is told so, not "internal error, see the logs".
      rt.log.error({ path: '/v1/call', file: error.file, err: error.message }, 'call refused: the do-not-call file cannot be read; no call is placed until it can')
      return withCache(apiErrorResponse(503, 'internal_error', `switchboard cannot read its do-not-call file (${basename(error.file)}), so no call was placed; see its logs`), 'BYPASS')
    }
    if (blocked) {
      const unaccepted = await unlessKeyAccepted(apiKey, tenant)
      if (unaccepted) return unaccepted
      rt.log.info({ agent_id: checked.request.agent_id }, 'call refused: its number is on the do-not-call list')
      // An earlier attempt with this key got no answer: it may have placed the call. Not sent again (the number is on
      // the list now), and not said "not called" as if nothing had been.
      const before = earlier && 'ambiguous' in earlier
        ? `; an earlier attempt with this idempotency key got no answer (${earlier.ambiguous.error ?? 'failed'}) and may have placed the call: see GET /v1/conversations`
        : ''
      return withCache(apiErrorResponse(400, 'invalid_request', `customer_phone is on the do-not-call list (switchboard): not called${before ? ' now' : ''}${before}`), 'BYPASS')
    }
    // A made-up key's call got a ledger row, settled rejected: anyone could write rows, with numbers and campaigns of
    // their choosing, into the calls list and the dashboard (0.28.1).
    // Within the call's budget: a provider too slow to answer the key's read took its whole UPSTREAM_TIMEOUT_MS before
    // the call's 25 s began, and a caller waited 40 s — past the 30 s many clients give up at, without the key to retry
    // with. Not answered within a fifth of the budget, the key is taken as unknown (the call goes on), and the call has
    // what is left.
    const started = rt.clock.now()
    const confirmMs = Math.min(rt.config.upstreamTimeoutMs, CALL_BUDGET_MS / 5)
    if (await refusedBeforeWrite(apiKey, tenant, confirmMs)) return refusedKey()
    // What the read took, at most its own limit (a clock that jumped meanwhile does not eat the call's whole budget).
    const spent = Math.min(Math.max(0, rt.clock.now() - started), confirmMs)
    // The key is chosen here rather than left to placeCall (which would make the same one) so that every
    // answer from now on can carry it: after a 5xx or a timeout the call may exist upstream, and only a
    // retry with this key is sure not to place it twice.
    const key = checked.request.idempotency_key ?? timeOrderedId(rt.clock.now(), rt.random)
    let reply: Response
    try {
      reply = await sendCall(apiKey, tenant, { ...checked.request, idempotency_key: key }, CALL_BUDGET_MS - spent)
    } catch (error) {
      reply = unexpectedFailure(rt, error, '/v1/call')
    }
    reply.headers.set('x-idempotency-key', key)
    return reply
  }

  /** The 409 for a key the ledger holds: a call being placed right now (its process may have died: a minute settles it), or placed. */
  function duplicateAnswer(record: CallRecord): Response {
    if (record.status === 'pending') {
      return withCache(apiErrorResponse(409, 'duplicate_request', 'a call with this idempotency key is being placed; retry with the same key in a minute to learn its outcome', { headers: { 'retry-after': String(Math.ceil(STALE_PENDING_MS / 1000)) } }), 'BYPASS')
    }
    return withCache(apiErrorResponse(409, 'duplicate_request', 'idempotency key already used'), 'BYPASS')
  }

  async function sendCall(apiKey: string, tenant: string, request: CallRequest, budgetMs: number): Promise<Response> {
    // A follow-up sent through /v1 (it continues a conversation) counts with the call it follows, unless it names a
    // campaign of its own: the report's campaigns and the follow-up planner's attempt cap then see one campaign.
    const ownCampaign = request.parameters.some((p) => p.name === 'campaign' && p.value)
    const campaign = request.conversation_id && !ownCampaign ? await continuedCampaign(rt, request.conversation_id) : null
    const result = await placeCall(rt, { apiKey, request, budgetMs, campaign })
    if (result.ok) {
      // Bookkeeping only: the call is placed, and a failure here must not answer it as failed (a caller would
      // place it again). The lists then expire on their own within their 10 s.
      try {
        await keys.accepted(tenant)
        await invalidateLists(tenant, ['conversation_list'])
      } catch (err) {
        rt.log.warn({ err }, 'call placed, but recording the key or invalidating the conversation lists failed')
      }
      const headers = new Headers(result.headers)
      headers.set('content-type', result.answer?.contentType ?? 'application/json')
      headers.set('x-cache', 'BYPASS')
      if (result.recovered) headers.set('x-switchboard-recovered', 'true')
      // The provider's own answer, as sent (a drop-in proxy); only a recovered call, which has none, is built here.
      if (result.answer) {
        const { status, body } = result.answer
        return new Response(status === 204 || status === 205 ? null : body, { status, headers })
      }
      return new Response(JSON.stringify({ data: result.call }), { status: 200, headers })
    }
    if (result.duplicate) return duplicateAnswer(result.record)
    await learn(tenant, result.error.status || 500)
    return errorFromVoiceApi(result.error)
  }

  async function handle(request: Request, asked = new URL(request.url)): Promise<ProxyReply> {
    const apiKey = bearer(request.headers.get('authorization'))
    if (!apiKey) return refusedKey()
    const tenant = tenantOf(apiKey)
    // `/v1//call` (a client's base URL ending in a slash) is `/v1/call`, as a provider behind a server that merges
    // slashes reads it: matched as such, not sent through as an unknown path — which placed a call with no do-not-call
    // check, no ledger row and no idempotency key.
    const url = mergedSlashes(asked)
    const route = matchRoute(request.method, url.pathname)
    const pathAndQuery = url.pathname + url.search
    // Reads only: they have no body to drain. Writes always ask the provider: a call's answer goes in the ledger.
    if ((request.method === 'GET' || request.method === 'HEAD') && keys.recentlyRefused(tenant)) return refusedKey()
    if (!route) {
      // A read the proxy does not cache: only-if-cached can have nothing but the 504 (RFC 9111 §5.2.1.7).
      if ((request.method === 'GET' || request.method === 'HEAD') && requestCachePolicy(request.headers).onlyIfCached) return notCached()
      const reply = await streamThrough(rt, request, { apiKey, pathAndQuery })
      // Another method on a path the proxy reads (DELETE /v1/conversations): HEAD works there as GET does, whatever
      // the provider's Allow says, since the proxy answers it.
      const allow = reply.headers.get('allow')
      if (reply.status === 405 && allow !== null && matchRoute('GET', url.pathname)) reply.headers.set('allow', withHead(allow))
      return reply
    }
    switch (route.name) {
      case 'create_call':
        return createCall(request, apiKey, tenant)
      case 'create_batch': {
        // The key first: a file is read, decompressed and checked only for a key the provider does not refuse (0.28.1).
        // Before, any made-up key had the proxy read a 100 MB upload — a 50 KB gzip bomb held the service for seconds.
        // Its body unread, the connection closes after the 401, so the client stops sending it.
        if (await refusedBeforeWrite(apiKey, tenant)) {
          const refused = refusedKey()
          refused.headers.set('connection', 'close')
          return refused
        }
        // The do-not-call list is checked before every batch row, as before every call: a listed row keeps the file here.
        const screened = await screenBatchUpload(rt, request, { beforeListedRefusal: () => unlessKeyAccepted(apiKey, tenant) })
        if (!screened.ok) return screened.reply
        // The new batch's id may have been read as missing just before (ids are sequential): its 404 goes too.
        return streamThrough(rt, screened.request, { apiKey, pathAndQuery, onSuccess: async () => { await forgetTenantNotFound(rt, tenant); await invalidateLists(tenant, ['batch_list']) } })
      }
      case 'create_transcription':
        return streamThrough(rt, request, { apiKey, pathAndQuery })
      case 'recording':
        return recording(request, url, route.id, apiKey, tenant)
      default:
        return cachedGet(request, url, route, apiKey, tenant)
    }
  }

  return {
    async handle(request, url) {
      try {
        return await handle(request, url)
      } catch (error) {
        return unexpectedFailure(rt, error, url?.pathname)
      }
    },
    async maintain() {
      await json.evict()
      await recordings.evict()
      await keys.sweep()
    },
    async flush() {
      await recordings.close()
      await json.flushTouches()
    },
  }
}

/** `url` with every run of slashes in its path as one (a path with none is returned as it is). */
function mergedSlashes(url: URL): URL {
  if (!url.pathname.includes('//')) return url
  const merged = new URL(url)
  merged.pathname = url.pathname.replace(/\/{2,}/g, '/')
  return merged
}
