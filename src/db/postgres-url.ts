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
    parse(withLibpqSslModes(url))
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

/**
 * `url` with its `sslmode` read as libpq (psql, every other client) reads it: node-postgres took `prefer`, `require` and
 * `verify-ca` for `verify-full` — a managed database's usual `?sslmode=require` URL failed on a private CA's
 * certificate where psql connects — and printed an 8-line warning at every start and command. So `require` encrypts
 * without checking the certificate, `verify-full` checks it (against `sslrootcert=` for a private CA), as documented
 * (README → Running on Postgres). A URL that says `uselibpqcompat` itself is left as it is.
 */
export function withLibpqSslModes(url: string): string {
  const query = url.indexOf('?')
  if (query === -1) return url
  const params = url.slice(query + 1).split('&')
  const mode = params.find((p) => p.toLowerCase().startsWith('sslmode='))?.slice('sslmode='.length)
  if (!mode || !['prefer', 'require', 'verify-ca'].includes(mode) || params.some((p) => p.toLowerCase().startsWith('uselibpqcompat='))) return url
  return `${url}&uselibpqcompat=true`
}
