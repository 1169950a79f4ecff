import { printable } from '../utils/printable.ts'
import { shownUrl } from '../utils/shown-url.ts'

/** Scheme, user info, host and the rest, of a Location that does not parse as a URL. */
const ROUGH_URL = /^([a-z][a-z0-9+.-]*:\/\/)?([^/?#]*@)?([^/?#]*)([\s\S]*)$/i

/**
 * A redirect's `Location` as errors, stored reasons and logs may show it. It usually names the destination's own
 * URL again (credentials, a token in the path or the query) and comes from the sink, so it is resolved against the
 * URL it answered for (a relative `/hooks/abc?token=…` inherits its host and credentials) and shown by `shownUrl`'s
 * rule. One that does not parse keeps its scheme and host only.
 */
export function shownLocation(location: string, base: URL): string {
  let resolved: URL
  try {
    resolved = new URL(location, base)
  } catch {
    const [, scheme = '', userInfo, host = '', rest = ''] = ROUGH_URL.exec(location) ?? []
    return printable(`${scheme}${userInfo ? '***@' : ''}${host}${rest ? '/…' : ''}`)
  }
  // Another scheme (a redirect to ftp:, say) by its host only: shownUrl hides the path segments of http(s) URLs alone
  // (a database URL's path is its database name), and a sink's Location can hold a token anywhere.
  if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') {
    return printable(`${resolved.protocol}${resolved.host ? '//' : ''}${resolved.username || resolved.password ? '***@' : ''}${resolved.host}${resolved.pathname.length > 1 || resolved.search || resolved.hash ? '/…' : ''}`)
  }
  return printable(shownUrl(resolved.href))
}
