import { shownUrl } from '../utils/shown-url.ts'

/** Errors that mean the database cannot be reached or opened at all (rather than a statement that failed). */
const UNREACHABLE = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET',
  // Postgres: password authentication failed, no such role / not allowed, database does not exist.
  '28P01', '28000', '3D000',
  // SQLite: the file or its folder cannot be opened or created.
  'SQLITE_CANTOPEN', 'SQLITE_PERM', 'SQLITE_READONLY', 'ENOTDIR', 'EEXIST', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC',
])

/**
 * At start-up a database that cannot be reached says which one and what to check, instead of a bare
 * `connect ECONNREFUSED 127.0.0.1:5432` — with the password of the URL hidden. Other errors pass unchanged.
 */
export function explainOpenError(error: unknown, databaseUrl: string): unknown {
  const e = error as { code?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : undefined
  if (!code || !UNREACHABLE.has(code)) return error
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]! : String(error)
  const reason = message.includes(code) ? message : `${code}: ${message}`
  const hint = databaseUrl.startsWith('postgres') ? 'is it running, and is DATABASE_URL right?' : 'can this process create and write files in DATA_DIR (or the folder DATABASE_URL names)?'
  return new Error(`cannot open the database ${shownUrl(databaseUrl)}: ${reason} — ${hint}`, { cause: error })
}
