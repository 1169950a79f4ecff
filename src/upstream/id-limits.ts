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
