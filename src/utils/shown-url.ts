/** A path segment an http(s) URL may show: a plain word, which no generated token or id is. */
const PLAIN_SEGMENT = /^[A-Za-z][A-Za-z_-]{0,31}$/
const HIDDEN = '…'

/**
 * A URL as shown in lists, logs, errors and stored reasons (a destination's, `DATABASE_URL`), with every place a
 * secret travels in hidden, by one rule whatever the service behind it:
 * - credentials (`https://user:pass@host/`, `https://key@host/`) become `***`, user and password alike —
 *   `basicAuthOf` sends a user alone as Basic auth, so an API key is often the user part;
 * - each query value becomes `…`, its name kept (`?token=…`; a parameter without a value is all `…`), and so
 *   does a fragment;
 * - in an http(s) URL the path keeps its first segment when that is a plain word (letters, `-`, `_`; at most 32),
 *   every other segment becomes `…`: webhook URLs carry their secret in the path (Slack's
 *   `/services/T…/B…/<secret>` shows as `/services/…/…/…`). Other schemes keep their path: a database's name
 *   or file.
 * Scheme, host and port stay, so the URL stays recognisable. A value with nothing to hide is kept as it is. One the
 * parser refuses still hides what could be a secret (shownUnparsed): drivers take values it does not.
 */
export function shownUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return shownUnparsed(url)
  }
  // An @ the parser did not read as the end of the credentials (`postgres:/app:pw@db`, an opaque path;
  // `postgres://app:2024/pw@db`, host "app" with the password in the path): what comes before the last one may be a
  // password, whatever the parser made of it.
  if (url.split('@').length - 1 > (parsed.username || parsed.password ? 1 : 0)) return shownUnparsed(url)
  const given = parsed.href
  if (parsed.username || parsed.password) {
    parsed.username = '***'
    parsed.password = ''
  }
  const href = parsed.href
  // `?` and `#` cannot appear unescaped before the query and the fragment they start.
  const hashAt = href.indexOf('#')
  const beforeHash = hashAt === -1 ? href : href.slice(0, hashAt)
  const queryAt = beforeHash.indexOf('?')
  let shown = queryAt === -1 ? beforeHash : beforeHash.slice(0, queryAt)
  if (parsed.protocol === 'http:' || parsed.protocol === 'https:') {
    // What is left ends with the path, as serialized.
    shown = shown.slice(0, shown.length - parsed.pathname.length) + shownPath(parsed.pathname)
  }
  if (queryAt !== -1) shown += `?${shownQuery(beforeHash.slice(queryAt + 1))}`
  if (hashAt !== -1) shown += href.length > hashAt + 1 ? `#${HIDDEN}` : '#'
  // Nothing hidden: the value as written, not as the parser spells it.
  return shown === given ? url : shown
}

/**
 * A value the URL parser refuses, with everything before its last `@` but a leading scheme hidden, and any query: the
 * Postgres driver reads `postgres://app:Secret@db host:5432/app` (a space in the host) and fails on the host, and that
 * error named the URL with its password; `postgres//app:pw@db` (a missing colon) is no URL at all.
 */
function shownUnparsed(value: string): string {
  // `postgres:///app:pw@db` keeps `postgres://` (its third slash belongs to what is hidden).
  const withoutUser = value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^]*@/i, '$1***@')
  const query = withoutUser.indexOf('?')
  return query === -1 ? withoutUser : `${withoutUser.slice(0, query)}?${HIDDEN}`
}

function shownPath(pathname: string): string {
  // segments[0] is the empty text before the leading slash; empty segments (a trailing slash) stay.
  return pathname
    .split('/')
    .map((segment, i) => (i === 0 || segment === '' || (i === 1 && PLAIN_SEGMENT.test(segment)) ? segment : HIDDEN))
    .join('/')
}

function shownQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      if (part === '') return part
      const eq = part.indexOf('=')
      return eq === -1 ? HIDDEN : `${part.slice(0, eq)}=${HIDDEN}`
    })
    .join('&')
}

/** The `Authorization: Basic …` value for a URL that carries credentials (a destination's), or undefined. */
export function basicAuthOf(url: URL): string | undefined {
  if (!url.username && !url.password) return undefined
  return `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
}
