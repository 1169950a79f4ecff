import { accessSync, constants as fsConstants, existsSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { mayAccess, ownerAndMode, processUser } from '../utils/owner-and-mode.ts'

/**
 * A SQLite database (or its -wal, -shm, or their folder) this process may not read or write, with what to do about it:
 * explainOpenError (src/db/open-error.ts) says `hint` after it instead of a guess from the code alone.
 */
export class DatabaseFileAccessError extends Error {
  constructor(
    message: string,
    readonly code: 'SQLITE_READONLY' | 'SQLITE_CANTOPEN',
    readonly hint: string,
  ) {
    super(message)
    this.name = 'DatabaseFileAccessError'
  }
}

/**
 * Fails when this process cannot read and write the database file, its -wal and -shm, or write in their folder. SQLite
 * opens a file it may only read read-only without a word (a database made by root, a `-wal` left by another user, a
 * read-only mount), and every read — migrations already applied included — works: the service then started half-way,
 * said ready, and refused every webhook. A file it may write but not read (0222) failed with SQLite's bare
 * `unable to open database file`, read as a folder it may not create files in. Asked of the file system (what SQLite's
 * own open tries), so it takes no lock: a probe write would fail with SQLITE_BUSY whenever another connection is writing.
 */
export function assertDatabaseFileAccess(file: string): void {
  const folder = dirname(file)
  if (existsSync(folder) && !mayAccess(folder, fsConstants.W_OK)) {
    throw new DatabaseFileAccessError(
      `${folder} ${isReadOnlyFileSystem(folder) ? 'is on a read-only file system' : `is not writable by this process (${processUser()})${describedOwner(folder)}`}`,
      'SQLITE_READONLY',
      'check the owner and mode of the database, its -wal / -shm and their folder (made by a command run as another user, root say?)',
    )
  }
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    if (!existsSync(path)) continue
    const readable = mayAccess(path, fsConstants.R_OK)
    const writable = mayAccess(path, fsConstants.W_OK)
    if (readable && writable) continue
    if (isReadOnlyFileSystem(path)) throw new DatabaseFileAccessError(`${path} is on a read-only file system`, 'SQLITE_READONLY', 'move DATA_DIR (or DATABASE_URL) to a writable file system')
    const lacking = !readable && !writable ? 'readable or writable' : readable ? 'writable' : 'readable'
    throw new DatabaseFileAccessError(`${path} is not ${lacking} by this process (${processUser()})${describedOwner(path)}`, readable ? 'SQLITE_READONLY' : 'SQLITE_CANTOPEN', fileFix(path))
  }
}

/** The way out for a database file this user may not read or write: its mode, when it is this user's; else its owner. */
function fileFix(path: string): string {
  const owner = statSync(path).uid
  if (owner === process.getuid?.()) return `the file is this user's, its mode alone is in the way: chmod 600 ${path}`
  return `run switchboard as its owner (uid ${owner}), or give this user the file (chown, as root) — the database, its -wal and -shm alike`
}

/** Whether writing `path` is refused because its file system is mounted read-only (access says EROFS then). */
function isReadOnlyFileSystem(path: string): boolean {
  try {
    accessSync(path, fsConstants.W_OK)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EROFS'
  }
}

/** `: it is owner uid 0, mode 644`, or nothing when even that cannot be read. */
function describedOwner(path: string): string {
  const owned = ownerAndMode(path)
  return owned ? `: it is ${owned}` : ''
}
