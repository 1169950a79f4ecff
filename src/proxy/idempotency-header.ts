export type WithIdempotencyKey = { ok: true; body: unknown } | { ok: false; message: string }

const quoted = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

/**
 * Honours the conventional `Idempotency-Key` request header on POST /v1/call. The provider reads the key
 * only from the body field `idempotency_key`, so the header is copied there; a header and a body field
 * that disagree are refused rather than guessing which one the caller meant.
 */
export function applyIdempotencyHeader(body: unknown, header: string | null): WithIdempotencyKey {
  if (header === null) return { ok: true, body }
  if (header === '') return { ok: false, message: 'Idempotency-Key header must not be empty' }
  // The header sent twice reaches here joined, "a1, a2": taken as one key, two different requests' keys made a third.
  // The same value twice is that value; two values are refused (a key with ", " in it goes in the body field).
  const values = header.split(', ')
  if (values.length > 1) {
    if (values.some((v) => v !== values[0])) {
      return { ok: false, message: `Idempotency-Key header was sent more than once with different values (${quoted(header)}): send one key (a key holding ", " goes in the body field idempotency_key)` }
    }
    return applyIdempotencyHeader(body, values[0]!)
  }
  // Not an object, or a body field of the wrong type: the body's own validation names that mistake.
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: true, body }
  const field = (body as Record<string, unknown>).idempotency_key
  if (field === undefined) return { ok: true, body: { ...body, idempotency_key: header } }
  if (typeof field !== 'string' || field === header) return { ok: true, body }
  return {
    ok: false,
    message: `Idempotency-Key header (${quoted(header)}) and body field idempotency_key (${quoted(field)}) disagree; send the key once, or the same key in both`,
  }
}
