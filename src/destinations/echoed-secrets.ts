/** Headers whose values are no secret: switchboard's own, and what names the content or the client. */
const NOT_SECRET: ReadonlySet<string> = new Set(['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'x-switchboard-event-type'])

/** Shorter values are left: "ops" in an answer is more likely a word of its own than the header's value echoed. */
const MIN_SECRET_LENGTH = 8

/**
 * What of a destination's URL may be a secret, as its shown form hides it (src/utils/shown-url.ts): each query value
 * and every path segment but the first (Slack's `/services/T0/B0/<token>`, `?token=`) — as sent and decoded.
 */
function urlSecretsOf(url: string): string[] {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const found = [...parsed.searchParams.values()]
  for (const raw of parsed.search.slice(1).split('&')) found.push(raw.slice(raw.indexOf('=') + 1))
  for (const segment of parsed.pathname.split('/').slice(2)) {
    found.push(segment)
    try {
      found.push(decodeURIComponent(segment))
    } catch {
      // Not percent-encoded UTF-8: only as sent.
    }
  }
  return found
}

/** The values a destination's answer must not show: each header's (credentials after their scheme too, Basic decoded), and the URL's. */
function secretsOf(headers: Readonly<Record<string, string>>, urls: readonly string[]): string[] {
  const found: string[] = urls.flatMap(urlSecretsOf)
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
 * headers or the URL) showed the destination's `Authorization`, or its URL's token, on the Destinations page and in the
 * CLI, where the URL itself is shown with them hidden. Longest first, so a credential inside a whole header value goes
 * with it.
 */
export function withoutEchoedSecrets(response: string, headers: Readonly<Record<string, string>>, urls: readonly string[] = []): string {
  // Most answers are empty or "ok": nothing to look for (this runs for every delivery).
  if (response.length < MIN_SECRET_LENGTH) return response
  let shown = response
  for (const secret of secretsOf(headers, urls)) if (shown.includes(secret)) shown = shown.split(secret).join('[redacted]')
  return shown
}
