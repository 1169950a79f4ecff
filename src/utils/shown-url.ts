/**
 * A URL as shown in lists, logs, errors and stored reasons (a destination's, `DATABASE_URL`): its credentials
 * (`https://user:pass@host/`, `https://key@host/`) become `***`, user and password alike — `basicAuthOf` sends
 * a user alone as Basic auth, so an API key is often the user part. Host and path stay, so the URL stays
 * recognisable.
 */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (!parsed.username && !parsed.password) return url
    parsed.username = '***'
    parsed.password = ''
    return parsed.href
  } catch {
    return url
  }
}

/** The `Authorization: Basic …` value for a URL that carries credentials (a destination's), or undefined. */
export function basicAuthOf(url: URL): string | undefined {
  if (!url.username && !url.password) return undefined
  return `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
}
