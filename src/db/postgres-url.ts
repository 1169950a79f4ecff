import { createRequire } from 'node:module'

type ParseConnectionString = (url: string) => unknown

let parse: ParseConnectionString | undefined

/**
 * Whether node-postgres can read `url` as a connection string. It parses with the WHATWG URL parser, which refuses
 * what other tools take — a `#`, `/` or `?` left raw in a password, a port past 65535, several hosts
 * (`h1:5432,h2:5432`) — and the service then stopped with a bare `Invalid URL` naming no setting. Asked of the
 * driver's own parser (pg-connection-string, loaded where pg finds it), so the check and the connection never disagree.
 */
export function postgresDriverReads(url: string): boolean {
  parse ??= loadParser()
  try {
    parse(url)
  } catch {
    return false
  }
  // Read, but not as meant: an @ left in what follows the host is a password with a raw `/`, `?` or `#` in it, or one
  // slash too many (`postgres:///app:pw@db`) — the driver takes host "app" (or none) and the rest for a database
  // name, and the connection failed as "ENOTFOUND app" naming no setting.
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
  const end = rest.search(/[/?#]/)
  return end === -1 || !rest.slice(end).includes('@')
}

function loadParser(): ParseConnectionString {
  const fromPg = createRequire(createRequire(import.meta.url).resolve('pg'))
  return (fromPg('pg-connection-string') as { parse: ParseConnectionString }).parse
}
