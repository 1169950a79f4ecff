import { accessSync, statSync } from 'node:fs'
import { userInfo } from 'node:os'

/**
 * What a permission problem is said with: who owns what is in the way and its mode, and who this process runs as. The
 * usual cause is a second user — a file or folder made by whoever first started the service, a command run as another
 * (root, or `sudo -u`) — and Node's bare `EACCES: permission denied, open '…'` named neither.
 */

/** `owner uid 0, mode 600` of what is at `path`; undefined when even that cannot be read (a folder this user may not enter). */
export function ownerAndMode(path: string): string | undefined {
  try {
    const stat = statSync(path)
    return `owner uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8).padStart(3, '0')}`
  } catch {
    return undefined
  }
}

/** `nobody, uid 65534`: the name where the system has one for this uid (a container's arbitrary uid has none). */
export function processUser(): string {
  const uid = process.getuid?.()
  let name: string | undefined
  try {
    name = userInfo().username
  } catch {
    name = undefined
  }
  return [name, uid === undefined ? undefined : `uid ${uid}`].filter((part) => part !== undefined).join(', ') || 'this process'
}

/** Whether this process may `mode` (fs.constants R_OK, W_OK, X_OK) `path`, as access(2) says: no throw either way. */
export function mayAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode)
    return true
  } catch {
    return false
  }
}
