import { createHmac, timingSafeEqual } from 'node:crypto'
import type { WebhookTargetConfig } from '../config/schema.ts'

/**
 * Signature schemes, all computed over the raw request bytes. Every comparison decodes the candidate,
 * checks its length and only then calls `timingSafeEqual`, so a short, long, empty or non-hex signature
 * is a plain mismatch (never a thrown RangeError → 500). Every secret is tried against every signature so
 * rotation works in both directions.
 */

export type RejectReason =
  | 'missing_signature'
  | 'invalid_signature'
  | 'missing_timestamp'
  | 'invalid_timestamp'
  | 'stale_timestamp'
  | 'no_secret'

export type VerifyResult = { ok: true; timestamp: number | undefined } | { ok: false; reason: RejectReason; message: string }

/** What a verifier needs from the request: lower-case header lookup and the raw body. */
export interface SignedRequest {
  header(name: string): string | undefined
  body: Buffer
}

export interface VerifyOptions {
  /** Seconds of accepted skew in both directions; 0 turns the check off. */
  toleranceSeconds: number
  nowMs: number
  allowUnsigned: boolean
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Decodes hex strictly (even length, hex digits only); undefined otherwise. */
export function decodeHex(text: string): Buffer | undefined {
  if (text.length === 0 || text.length % 2 !== 0) return undefined
  const bytes = Buffer.from(text, 'hex')
  // Node stops decoding at the first pair that is not hex: a short result is text that was not all hex. (No regular
  // expression over the text first: this runs for every delivery the receiver takes.)
  return bytes.length * 2 === text.length ? bytes : undefined
}

/** Decodes standard or URL-safe base64; undefined for anything else. */
export function decodeBase64(text: string): Buffer | undefined {
  if (text.length === 0 || !BASE64.test(text)) return undefined
  return Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64')
}

/** Constant-time equality of two byte strings that never throws: a length mismatch is false. */
export function safeEqual(expected: Buffer, candidate: Buffer | undefined): boolean {
  if (!candidate || candidate.length !== expected.length || expected.length === 0) return false
  return timingSafeEqual(expected, candidate)
}

/** True when any candidate matches any expected digest; all pairs are compared (no early exit). */
function anyMatch(expected: Buffer[], candidates: Array<Buffer | undefined>): boolean {
  let matched = false
  for (const e of expected) for (const c of candidates) if (safeEqual(e, c)) matched = true
  return matched
}

/** Unix seconds, integers only ("1767225600"); undefined for anything else. */
export function parseUnixSeconds(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,12}$/.test(text.trim())) return undefined
  return Number(text.trim())
}

/**
 * The timestamp rule every scheme shares: with the check on (a tolerance above 0) the header is required and within
 * the tolerance; with it off (0) it is not required, and read when present.
 */
/**
 * A header sent twice with the same value (a proxy that adds what was there already) as that value: Node joins the
 * two as `t, t`, which was refused as "must be whole Unix seconds". Two different values stay joined, and refused.
 */
function oneValue(raw: string | undefined): string | undefined {
  if (raw === undefined || !raw.includes(',')) return raw
  const values = raw.split(',').map((v) => v.trim())
  return values.every((v) => v === values[0]) ? values[0] : raw
}

function timestampRule(raw: string | undefined, options: VerifyOptions, headerName: string): VerifyResult {
  return options.toleranceSeconds > 0 ? checkTimestamp(raw, options, headerName) : { ok: true, timestamp: parseUnixSeconds(raw) }
}

function checkTimestamp(raw: string | undefined, options: VerifyOptions, headerName: string): VerifyResult {
  if (raw === undefined || raw.trim() === '') {
    return { ok: false, reason: 'missing_timestamp', message: `missing ${headerName} header` }
  }
  const seconds = parseUnixSeconds(raw)
  if (seconds === undefined) {
    return { ok: false, reason: 'invalid_timestamp', message: `${headerName} must be whole Unix seconds` }
  }
  if (options.toleranceSeconds > 0) {
    // In whole seconds, as the timestamp is written (and as Standard Webhooks' reference compares): against the clock's
    // milliseconds, one exactly the tolerance old was refused for the fraction of a second the clock had gone on.
    const skew = Math.abs(Math.floor(options.nowMs / 1000) - seconds)
    if (skew > options.toleranceSeconds) {
      return { ok: false, reason: 'stale_timestamp', message: `${headerName} is outside the accepted ${options.toleranceSeconds} s tolerance` }
    }
  }
  return { ok: true, timestamp: seconds }
}

/** Splits a header that may carry several signatures (comma- or space-separated). */
function splitSignatures(header: string): string[] {
  return header
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)
}

function hmac(algorithm: string, key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key)
  for (const part of parts) mac.update(part)
  return mac.digest()
}

/**
 * The provider's scheme: `X-FormantAI-Signature: sha256=<hex HMAC-SHA256(secret as UTF-8, raw body)>`;
 * `X-FormantAI-Timestamp` (unsigned Unix seconds) checked against the tolerance when the check is on.
 */
export function verifyFormant(req: SignedRequest, secrets: string[], options: VerifyOptions): VerifyResult {
  const tsHeader = oneValue(req.header('x-formantai-timestamp'))
  if (secrets.length === 0) {
    if (!options.allowUnsigned) return { ok: false, reason: 'no_secret', message: 'this target has no secret configured' }
    return timestampRule(tsHeader, options, 'X-FormantAI-Timestamp')
  }
  const header = req.header('x-formantai-signature')
  if (!header || !header.trim()) return { ok: false, reason: 'missing_signature', message: 'missing X-FormantAI-Signature header' }
  const candidates = splitSignatures(header).map((s) => (s.startsWith('sha256=') ? decodeHex(s.slice('sha256='.length)) : undefined))
  const expected = secrets.map((secret) => hmac('sha256', secret, req.body))
  if (!anyMatch(expected, candidates)) return { ok: false, reason: 'invalid_signature', message: 'signature does not match' }
  return timestampRule(tsHeader, options, 'X-FormantAI-Timestamp')
}

/**
 * The `v1,<base64>` entries of a `webhook-signature` header: space-separated, and — the header sent twice, which Node
 * joins as `a, b` — comma-separated too. Each entry has a comma of its own (`v1,`), so the list splits on whitespace
 * and drops the joining comma an entry then ends with (base64 has none): split on spaces alone, a valid signature
 * sent first of two headers ended in `,` and was refused.
 */
function standardSignatures(header: string): string[] {
  return header
    .split(/\s+/)
    .map((s) => s.replace(/,+$/, ''))
    .filter(Boolean)
}

/** Standard Webhooks keys: `whsec_` + base64 of the key bytes. */
function standardKey(secret: string): Buffer | undefined {
  return decodeBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret)
}

/**
 * Standard Webhooks v1: HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}` keyed with the
 * base64-decoded `whsec_` secret; `webhook-signature` is a space-separated list of `v1,<base64>`.
 * The timestamp is signed, so it is always required.
 */
export function verifyStandard(req: SignedRequest, secrets: string[], options: VerifyOptions): VerifyResult {
  const id = req.header('webhook-id')
  const ts = oneValue(req.header('webhook-timestamp'))
  if (secrets.length === 0 && options.allowUnsigned) {
    return timestampRule(ts, options, 'webhook-timestamp')
  }
  if (secrets.length === 0) return { ok: false, reason: 'no_secret', message: 'this target has no secret configured' }
  const header = req.header('webhook-signature')
  if (!header || !header.trim() || !id) return { ok: false, reason: 'missing_signature', message: 'missing webhook-id or webhook-signature header' }
  const time = checkTimestamp(ts, { ...options, toleranceSeconds: 0 }, 'webhook-timestamp')
  if (!time.ok) return time
  const candidates = standardSignatures(header).map((s) => (s.startsWith('v1,') ? decodeBase64(s.slice(3)) : undefined))
  const expected: Buffer[] = []
  for (const secret of secrets) {
    const key = standardKey(secret)
    if (key) expected.push(hmac('sha256', key, `${id}.${ts!.trim()}.`, req.body))
  }
  if (!anyMatch(expected, candidates)) return { ok: false, reason: 'invalid_signature', message: 'signature does not match' }
  return checkTimestamp(ts, options, 'webhook-timestamp')
}

export type HmacTarget = Extract<WebhookTargetConfig, { scheme: 'hmac' }>

/**
 * A generic HMAC over the raw body: the configured header carries `<prefix><digest>` (hex or base64).
 * With `timestampHeader` set, that header is required and checked against the tolerance while the check is on
 * (it is not part of the signed content).
 */
export function verifyHmac(req: SignedRequest, target: HmacTarget, options: VerifyOptions): VerifyResult {
  const tsHeader = target.timestampHeader ? oneValue(req.header(target.timestampHeader)) : undefined
  const timeCheck = (): VerifyResult => (target.timestampHeader ? timestampRule(tsHeader, options, target.timestampHeader) : { ok: true, timestamp: undefined })
  if (target.secrets.length === 0) {
    if (!options.allowUnsigned) return { ok: false, reason: 'no_secret', message: 'this target has no secret configured' }
    return timeCheck()
  }
  const header = req.header(target.header)
  if (!header || !header.trim()) return { ok: false, reason: 'missing_signature', message: `missing ${target.header} header` }
  const decode = target.encoding === 'hex' ? decodeHex : decodeBase64
  const candidates = splitSignatures(header).map((s) => (s.startsWith(target.prefix) ? decode(s.slice(target.prefix.length)) : undefined))
  const expected = target.secrets.map((secret) => hmac(target.algorithm, secret, req.body))
  if (!anyMatch(expected, candidates)) return { ok: false, reason: 'invalid_signature', message: 'signature does not match' }
  return timeCheck()
}

/** Verifies a request against a target's scheme. */
export function verifyRequest(req: SignedRequest, target: WebhookTargetConfig, options: VerifyOptions): VerifyResult {
  try {
    switch (target.scheme) {
      case 'formant':
        return verifyFormant(req, target.secrets, options)
      case 'standard':
        return verifyStandard(req, target.secrets, options)
      case 'hmac':
        return verifyHmac(req, target, options)
    }
  } catch {
    // Belt and braces: a verifier must answer 401, never crash the request.
    return { ok: false, reason: 'invalid_signature', message: 'signature could not be verified' }
  }
}

/** Signs a body the provider's way (tests, benchmarks, and the sandbox). */
export function signFormant(body: string | Buffer, secret: string): string {
  return `sha256=${hmac('sha256', secret, body).toString('hex')}`
}

/** Signs a body the Standard Webhooks way (tests). */
export function signStandard(id: string, timestamp: number, body: string | Buffer, secret: string): string {
  const key = standardKey(secret)
  if (!key) throw new Error('a Standard Webhooks secret is whsec_ followed by base64')
  return `v1,${hmac('sha256', key, `${id}.${timestamp}.`, body).toString('base64')}`
}
