import { shownUrl } from '../utils/shown-url.ts'
import { DatabaseFileAccessError } from './database-file-access.ts'

/** Errors that mean the database cannot be reached or opened at all (rather than a statement that failed). */
const UNREACHABLE = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET',
  // Postgres: password authentication failed, no such role / not allowed, database does not exist; starting up,
  // shutting down (admin, crash), too many connections, and the connection exceptions (08…).
  '28P01', '28000', '3D000', '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006',
  // SQLite: the file or its folder cannot be opened or created.
  'SQLITE_CANTOPEN', 'SQLITE_PERM', 'SQLITE_READONLY', 'ENOTDIR', 'EEXIST', 'EACCES', 'EPERM', 'EROFS',
])

/**
 * At start-up a database that cannot be reached says which one and what to check, instead of a bare
 * `connect ECONNREFUSED 127.0.0.1:5432` — with the password of the URL hidden. Other errors pass unchanged.
 */
/** SQLite's answers about the file itself, at start-up: what to do about each. */
const FILE_TROUBLE: ReadonlyArray<[RegExp, string]> = [
  [/^SQLITE_(NOTADB|CORRUPT)/, 'the file is not a SQLite database or is damaged: restore it from a backup (README → Operations), or move it aside to start with an empty one'],
  [/^SQLITE_FULL$|^ENOSPC$/, 'the disk is full: free space where DATA_DIR is'],
  [/^SQLITE_IOERR/, 'the disk could not read or write it (full, failing, or a network mount gone): check where DATA_DIR is'],
]

/** What to do about SQLite's answer `code` about the file itself (damaged, a full disk, I/O), if it is one of those. */
export function sqliteFileTrouble(code: string | undefined): string | undefined {
  return code === undefined ? undefined : FILE_TROUBLE.find(([pattern]) => pattern.test(code))?.[1]
}

/**
 * node-postgres's own errors carry no code: a port that accepts and closes at once (pgbouncer, HAProxy or a container's
 * published port, with the database behind it down) is `Connection terminated unexpectedly`. Read as unreachable. So is
 * the next statement on a client whose connection died meanwhile (its backend terminated, mid-transaction): "Client has
 * encountered a connection error and is not queryable" — taken for a statement's mistake, the destinations' outcomes
 * were given up at once and their answered deliveries sent again.
 */
const PG_CLIENT_UNREACHABLE = /^Connection terminated( unexpectedly| due to connection timeout)?$|^timeout expired$|^Client has encountered a connection error and is not queryable$/

/**
 * Whether `error` is the database being unreachable (refused, reset, gone, shutting down, a connection that closed at
 * once) rather than a statement it refused: what a probe of the database sees too, and stops seeing once it is back.
 */
/**
 * Postgres's 55000 (object not in prerequisite state) is a statement's mistake too (currval before nextval); with this
 * message it is a database closed to connections (`ALTER DATABASE … ALLOW_CONNECTIONS false`, during maintenance).
 */
const NOT_ACCEPTING = /is not currently accepting connections/

export function isUnreachableError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null
  if (e?.code === '55000') return typeof e.message === 'string' && NOT_ACCEPTING.test(e.message)
  if (typeof e?.code === 'string') return UNREACHABLE.has(e.code) || e.code.startsWith('08')
  return typeof e?.message === 'string' && PG_CLIENT_UNREACHABLE.test(e.message)
}

/** TLS trouble at connection: the server's certificate not trusted, or no TLS at all; what to change in the URL. */
const TLS_TROUBLE: ReadonlyArray<[RegExp, string]> = [
  [/^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID)$/, "the server's certificate is not trusted: give its CA with sslrootcert=/path/ca.pem (sslmode=verify-full), or encrypt without checking it (sslmode=require)"],
]
const NO_TLS = /^The server does not support SSL connections$/

export function explainOpenError(error: unknown, databaseUrl: string): unknown {
  const e = error as { code?: unknown; message?: unknown } | null
  const postgres = databaseUrl.startsWith('postgres')
  const code = typeof e?.code === 'string' ? e.code : undefined
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]! : String(error)
  // Every explained error is this one line: which database (its password hidden), what it said, what to do.
  const explained = (said: string, hint: string) => new Error(`cannot open the database ${shownUrl(databaseUrl)}: ${said} — ${hint}`, { cause: error })
  if (postgres) {
    const tls = code ? TLS_TROUBLE.find(([pattern]) => pattern.test(code))?.[1] : undefined
    if (tls) return explained(message, tls)
    if (NO_TLS.test(message)) return explained(message, 'the server speaks no TLS: take sslmode out of DATABASE_URL, or turn ssl on in the server')
  }
  // This process's access to the file or its folder: the check knows which, and what to do about it.
  if (error instanceof DatabaseFileAccessError) return explained(`${error.code}: ${error.message}`, error.hint)
  const trouble = postgres ? undefined : sqliteFileTrouble(code)
  if (trouble) return explained(`${message} (${code})`, trouble)
  const pgClientGone = postgres && code === undefined && PG_CLIENT_UNREACHABLE.test(message)
  const closed = postgres && code === '55000' && NOT_ACCEPTING.test(message)
  if (!pgClientGone && !closed && (!code || !UNREACHABLE.has(code))) return error
  const reason = !code || message.includes(code) ? message : `${code}: ${message}`
  const hint = closed
    ? 'it is closed to connections (ALTER DATABASE … ALLOW_CONNECTIONS false, during maintenance): open it again with ALLOW_CONNECTIONS true'
    : postgres
    ? 'is it running, and is DATABASE_URL right?'
    : code === 'SQLITE_READONLY'
      ? 'check the owner and mode of the database, its -wal / -shm and their folder (made by a command run as another user, root say?)'
      : 'can this process create and write files in DATA_DIR (or the folder DATABASE_URL names)?'
  return explained(reason, hint)
}
