/**
 * What a webhook secret must be. A placeholder left in a config (`whsec_CHANGE_ME`, `changeme`, `your-secret`, `xxx`) is
 * refused on every scheme: it would verify deliveries signed with it by anyone who read the same example. Beyond that
 * each scheme takes what it uses as the key:
 * - `standard` (Standard Webhooks) signs with the bytes the base64 after `whsec_` decodes to (the prefix is optional):
 *   strict standard base64, as the senders' libraries decode it, of at least 24 bytes (the specification's 24–64).
 * - `formant` (WEBHOOK_SECRET) and `hmac` sign with the secret's text, so any string is a key; one written `whsec_…` is
 *   meant as the Standard Webhooks form and is refused when what follows could not be base64.
 */

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
/** Standard or URL-safe base64, as WEBHOOK_SECRET's `whsec_` secrets have always been taken (their text is the key). */
const LOOSE_BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/
export const MIN_STANDARD_KEY_BYTES = 24

/** Placeholders, compared without case, separators (`-`, `_`, spaces) or the angle brackets of `<your-secret>`. */
const PLACEHOLDER_WORDS = new Set([
  'changeme', 'changethis', 'replaceme', 'placeholder', 'secret', 'yoursecret', 'yoursecrethere', 'secrethere', 'mysecret',
  'webhooksecret', 'yourwebhooksecret', 'signingsecret', 'yoursigningsecret', 'todo', 'tbd', 'fixme', 'example', 'sample',
  'dummy', 'redacted', 'undefined', 'null', 'none',
])

export function isPlaceholderSecret(secret: string): boolean {
  const text = secret.replace(/^whsec_/i, '').replace(/^<(.*)>$/, '$1').replace(/[\s_-]+/g, '').toLowerCase()
  // `xxx`, `XXXXXXXX`, `…`, `...`, `***`: a value left blank in a sample.
  return PLACEHOLDER_WORDS.has(text) || /^(x{3,}|…+|\.+|\*+)$/.test(text)
}

const MAKE_ONE = 'the sender shows it, or make one with openssl rand -base64 32'

/** Why `secret` cannot be a secret of `scheme` (`formant` also for WEBHOOK_SECRET), or undefined when it can. */
export function secretProblem(secret: string, scheme: 'formant' | 'standard' | 'hmac'): string | undefined {
  if (isPlaceholderSecret(secret)) {
    return `has a placeholder secret ("changeme", "whsec_CHANGE_ME", "your-secret", "xxx"…): set the real one (${MAKE_ONE})`
  }
  const prefixed = secret.startsWith('whsec_')
  const base64 = prefixed ? secret.slice('whsec_'.length) : secret
  if (scheme === 'standard') {
    if (!base64 || !STRICT_BASE64.test(base64)) {
      return `has a secret that is not base64: a Standard Webhooks secret is whsec_ followed by the base64 of the key (A–Z a–z 0–9 + /, = padding; ${MAKE_ONE})`
    }
    if (Buffer.from(base64, 'base64').length < MIN_STANDARD_KEY_BYTES) {
      return `has a secret of fewer than ${MIN_STANDARD_KEY_BYTES} bytes: a Standard Webhooks secret is whsec_ followed by the base64 of ${MIN_STANDARD_KEY_BYTES} to 64 random bytes (${MAKE_ONE})`
    }
    return undefined
  }
  if (prefixed && !LOOSE_BASE64.test(base64)) {
    return `has a whsec_ secret that is not valid base64 (whsec_ is followed by the base64 of the key: ${MAKE_ONE})`
  }
  return undefined
}
