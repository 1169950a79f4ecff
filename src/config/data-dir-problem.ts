import { dirname, resolve } from 'node:path'
import { ownerAndMode, processUser } from '../utils/owner-and-mode.ts'

/**
 * Why DATA_DIR could not be made, as the end of a ConfigError's "DATA_DIR …" line; undefined for an error this does not
 * explain (passed on as it is). Its parent belongs to someone else — a folder made as root, a home another user's —
 * and `serve` or a command stopped with Node's bare `EACCES: permission denied, mkdir '…'`, which named neither whose
 * folder was in the way nor that DATA_DIR can point elsewhere.
 */
export function dataDirProblem(error: unknown, dataDir: string): string | undefined {
  const e = error as NodeJS.ErrnoException | null
  if (typeof e?.code !== 'string') return undefined
  // The folder mkdir was making: DATA_DIR, or the first of its missing parents.
  const parent = dirname(typeof e.path === 'string' ? e.path : resolve(dataDir))
  if (e.code === 'EACCES' || e.code === 'EPERM') {
    const owned = ownerAndMode(parent)
    return `${dataDir} cannot be created: this user (${processUser()}) may not write in ${parent} — permission denied${owned ? `; it is ${owned}` : ''}. Create the folder as or for this user (mkdir, then chown), or set DATA_DIR to a folder this user may write`
  }
  // A file where DATA_DIR (EEXIST) or one of its parents (ENOTDIR: the parent of the folder being made) should be.
  if (e.code === 'EEXIST' || e.code === 'ENOTDIR') {
    const file = e.code === 'EEXIST' ? (typeof e.path === 'string' ? e.path : dataDir) : parent
    return `${dataDir} cannot be created: ${file} is a file, not a folder. Move it aside, or set DATA_DIR to a folder`
  }
  if (e.code === 'EROFS') return `${dataDir} cannot be created: ${parent} is on a read-only file system. Set DATA_DIR to a folder on a writable one`
  return undefined
}
