import { ownerAndMode, processUser } from '../utils/owner-and-mode.ts'

/** A secret switchboard keeps in DATA_DIR when its setting is not set: the sandbox's webhook secret, the admin token. */
export interface KeptSecret {
  /** The setting that does without the file: WEBHOOK_SECRET, ADMIN_TOKEN. */
  setting: string
  /** What keeps it, and what: `sandbox mode keeps a secret of its own`. */
  keeps: string
  file: string
  dataDir: string
  doing: 'read' | 'create'
}

/**
 * Why a secret kept in DATA_DIR could not be read or made, as the end of a ConfigError's `<setting> …` line; undefined
 * for an error that is not the file system's (passed on as it is). The usual cause is a second user: the service made
 * the file 0600 (and a new DATA_DIR 0700) as the user that first started it, and a CLI command or `serve` run as another
 * one (root, or `sudo -u`) stopped with Node's bare `EACCES: permission denied, open '…'`, which named neither the
 * setting that avoids the file nor who may read it.
 */
export function secretFileProblem(error: unknown, at: KeptSecret): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code
  if (typeof code !== 'string') return undefined
  const head = `is not set, so ${at.keeps} in ${at.file}, which`
  if (code === 'EISDIR') return `${head} is a folder, not a file: remove it (a new secret is made in its place) or set ${at.setting}`
  if (code === 'EACCES' || code === 'EPERM') {
    // Reading, the file stands in the way; creating, the folder it is made in (its temporary file, then the rename).
    const blocking = at.doing === 'read' ? `the file is ${ownerAndMode(at.file) ?? ownerAndMode(at.dataDir)}` : `DATA_DIR ${at.dataDir} is ${ownerAndMode(at.dataDir)}`
    const access = at.doing === 'read' ? 'read and write access to the file' : 'write access to DATA_DIR'
    return `${head} this user (${processUser()}) may not ${at.doing} — permission denied; ${blocking}. Run switchboard as the user that owns DATA_DIR, give this user ${access} (chown or chmod), or set ${at.setting}`
  }
  if (code === 'EROFS') return `${head} cannot be created: DATA_DIR is on a read-only file system. Point DATA_DIR at a writable folder, or set ${at.setting}`
  const message = error instanceof Error ? error.message : String(error)
  return `${head} cannot be ${at.doing === 'read' ? 'read' : 'created'}: ${message}. Set ${at.setting} to go without it`
}
