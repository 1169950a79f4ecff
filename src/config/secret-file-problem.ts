import { statSync } from 'node:fs'
import { userInfo } from 'node:os'

/**
 * Why the secret sandbox mode keeps in DATA_DIR could not be read or made, as the end of a ConfigError's "WEBHOOK_SECRET
 * …" line; undefined for an error that is not the file system's (passed on as it is). The usual cause is a second
 * user: the service made the file 0600 (and a new DATA_DIR 0700) as the user that first started it, and a CLI command
 * run as another one (root, or `sudo -u`) stopped with Node's bare `EACCES: permission denied, open '…'`, which named
 * neither the setting that avoids the file nor who may read it.
 */
export function secretFileProblem(error: unknown, at: { file: string; dataDir: string; doing: 'read' | 'create' }): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code
  if (typeof code !== 'string') return undefined
  const head = `is not set, so sandbox mode keeps a secret of its own in ${at.file}, which`
  if (code === 'EISDIR') return `${head} is a folder, not a file: remove it (a new secret is made in its place) or set WEBHOOK_SECRET`
  if (code === 'EACCES' || code === 'EPERM') {
    // Reading, the file stands in the way; creating, the folder it is made in (its temporary file, then the rename).
    const blocking = at.doing === 'read' ? `the file is ${modeOf(at.file) ?? modeOf(at.dataDir)}` : `DATA_DIR ${at.dataDir} is ${modeOf(at.dataDir)}`
    const access = at.doing === 'read' ? 'read and write access to the file' : 'write access to DATA_DIR'
    return `${head} this user (${currentUser()}) may not ${at.doing} — permission denied; ${blocking}. Run switchboard as the user that owns DATA_DIR, give this user ${access} (chown or chmod), or set WEBHOOK_SECRET`
  }
  if (code === 'EROFS') return `${head} cannot be created: DATA_DIR is on a read-only file system. Point DATA_DIR at a writable folder, or set WEBHOOK_SECRET`
  const message = error instanceof Error ? error.message : String(error)
  return `${head} cannot be ${at.doing === 'read' ? 'read' : 'created'}: ${message}. Set WEBHOOK_SECRET to go without it`
}

/** `owner uid 0, mode 600` of what is at `path`; undefined when even that cannot be read (a folder this user may not enter). */
function modeOf(path: string): string | undefined {
  try {
    const stat = statSync(path)
    return `owner uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8).padStart(3, '0')}`
  } catch {
    return undefined
  }
}

/** `nobody, uid 65534`: the name where the system has one for this uid (a container's arbitrary uid has none). */
function currentUser(): string {
  const uid = process.getuid?.()
  let name: string | undefined
  try {
    name = userInfo().username
  } catch {
    name = undefined
  }
  return [name, uid === undefined ? undefined : `uid ${uid}`].filter((part) => part !== undefined).join(', ') || 'this process'
}
