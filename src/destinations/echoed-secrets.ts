/** Headers whose values are no secret: switchboard's own, and what names the content or the client. */
const NOT_SECRET: ReadonlySet<string> = new Set(['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'x-switchboard-event-type'])

/** Shorter values are left: "ops" in an answer is more likely a word of its own than the header's value echoed. */
const MIN_SECRET_LENGTH = 8
/**
 * The credentials of an `Authorization` header (after its scheme; Basic's pair and password decoded) are secrets
 * whatever they look like: a URL's password `pw123` was echoed and kept as sent. Below 4 characters a value is too
 * likely part of the answer's own text to hide it everywhere.
 */
const MIN_CREDENTIAL_LENGTH = 4
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization'])

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
  const found: string[] = urls.flatMap(urlSecretsOf).filter((s) => s.length >= MIN_SECRET_LENGTH)
  for (const [name, value] of Object.entries(headers)) {
    const header = name.toLowerCase()
    if (NOT_SECRET.has(header)) continue
    const least = CREDENTIAL_HEADERS.has(header) ? MIN_CREDENTIAL_LENGTH : MIN_SECRET_LENGTH
    const [scheme, credentials] = value.split(/\s+/, 2)
    const parts = [value]
    if (credentials) {
      parts.push(credentials)
      if (scheme!.toLowerCase() === 'basic') {
        // The pair, the password and the user alone: a user alone is often an API key (a URL's `https://<key>@host`).
        const decoded = Buffer.from(credentials, 'base64').toString('utf8')
        const colon = decoded.indexOf(':')
        parts.push(decoded, decoded.slice(colon + 1))
        if (colon >= 0) parts.push(decoded.slice(0, colon))
      }
    }
    found.push(...parts.filter((s) => s.length >= least))
  }
  return [...new Set(found.flatMap(escapedForms))].sort((a, b) => b.length - a.length)
}

/**
 * A secret as sent, and as a sink quoting it in JSON writes it: `"` and `\` escaped, control characters as `\u…`, and
 * `/` as `\/` (PHP's json_encode, by default). `pa"ss` was echoed as `pa\"ss` and kept in clear.
 */
function escapedForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1)
  return [secret, json, json.replaceAll('/', '\\/')]
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
  if (response.length < MIN_CREDENTIAL_LENGTH) return response
  let shown = response
  for (const secret of secretsOf(headers, urls)) if (shown.includes(secret)) shown = shown.split(secret).join('[redacted]')
  return shown
}
