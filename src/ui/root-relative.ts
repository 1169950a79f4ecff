/**
 * The dashboard works under any path a reverse proxy serves the service at (`https://example.com/ops/switchboard/ui`,
 * the proxy stripping `/ops/switchboard` before it passes the request on), with nothing to configure: its pages never
 * name an absolute path. Each page sets `<base href>` to the way back from where it is to the service's root, and
 * every link, form, asset and htmx request is written from there (`ui/calls`, not `/ui/calls`). Redirects are relative
 * references too. The browser resolves both against the address it shows, prefix included.
 */

/**
 * From a path the service answers (`/ui/events/evt_1`, the prefix already stripped) back to the service's root, as a
 * relative reference: `./` for a path at the top (`/`, `/ui`), one `../` for each folder below it.
 */
export function rootFrom(pathname: string): string {
  const depth = pathname.split('/').length - 2
  return depth > 0 ? '../'.repeat(depth) : './'
}

/**
 * A path the service answers (`/ui/mail?done=…`) as a relative reference from `pathname`, for a `Location` header: it
 * reaches the same page whatever prefix the browser's address has.
 */
export function relativeFrom(pathname: string, target: string): string {
  return rootFrom(pathname) + target.replace(/^\/+/, '')
}
