/**
 * The longest ids and keys switchboard stores, far above what the provider sends (its ids are UUID-sized) and what
 * callers need (a UUID is 36 characters; Stripe takes idempotency keys of up to 255). Each is a key or an indexed
 * column, and Postgres refuses an index entry past ~2,700 bytes — the statement fails: a call with a key of
 * thousands of characters was a 500 on Postgres where SQLite stored it. Checked where they come in: the webhook
 * receiver (src/webhooks/storable.ts), POST /v1/call (src/calls/validate-call.ts), a recipe's scheduleCall.
 */
export const MAX_CONVERSATION_ID_LENGTH = 255
export const MAX_TRACE_ID_LENGTH = 255
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255
/** A customer_phone as people write it — spaces, dashes, brackets, an extension — is far shorter (E.164 is 16). */
export const MAX_PHONE_LENGTH = 64

/**
 * Why `key` cannot be an idempotency key, or undefined when it can. switchboard echoes the key in the
 * `X-Idempotency-Key` answer header and takes it from the `Idempotency-Key` request header, and header values are
 * bytes: a key beyond printable ASCII could not be echoed — the call was placed, then the answer failed (500), and a
 * retry with the same key answered 500 again — and spaces at either end are trimmed off a header, so a retry sending
 * the key as a header was another key and placed the call twice. A UUID (the spec's advice) always passes.
 */
export function idempotencyKeyProblem(key: string): string | undefined {
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`
  if (!/^[\x20-\x7e]*$/.test(key)) return 'must be printable ASCII (letters, digits, punctuation; a UUID is recommended)'
  if (key.trim() !== key) return 'must not begin or end with a space'
  return undefined
}
