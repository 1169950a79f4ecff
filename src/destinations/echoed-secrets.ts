/** Headers whose values are no secret: switchboard's own, and what names the content or the client. */
const NOT_SECRET: ReadonlySet<string> = new Set(['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'x-switchboard-event-type'])

/** Shorter values are left: "ops" in an answer is more likely a word of its own than the header's value echoed. */
const MIN_SECRET_LENGTH = 8

/** The values a destination's answer must not show: each header's (credentials after their scheme too, Basic decoded). */
function secretsOf(headers: Readonly<Record<string, string>>): string[] {
  const found: string[] = []
  for (const [name, value] of Object.entries(headers)) {
    if (NOT_SECRET.has(name.toLowerCase())) continue
    found.push(value)
    const [scheme, credentials] = value.split(/\s+/, 2)
    if (!credentials) continue
    found.push(credentials)
    if (scheme!.toLowerCase() !== 'basic') continue
    const decoded = Buffer.from(credentials, 'base64').toString('utf8')
    found.push(decoded, decoded.slice(decoded.indexOf(':') + 1))
  }
  return found.filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length)
}

/**
 * A destination's answer as kept (the delivery's attempt log, the dashboard, `destinations test`) without the secrets
 * switchboard sent it: a sink that echoes its request (httpbin, a debugging endpoint, an error page quoting the
 * headers) showed the destination's `Authorization` on the Destinations page and in the CLI. Longest first, so a
 * credential inside a whole header value goes with it.
 */
export function withoutEchoedSecrets(response: string, headers: Readonly<Record<string, string>>): string {
  // Most answers are empty or "ok": nothing to look for (this runs for every delivery).
  if (response.length < MIN_SECRET_LENGTH) return response
  let shown = response
  for (const secret of secretsOf(headers)) if (shown.includes(secret)) shown = shown.split(secret).join('[redacted]')
  return shown
}
