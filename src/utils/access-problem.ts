import { constants as fsConstants, existsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { mayAccess, ownerAndMode, processUser } from './owner-and-mode.ts'

/**
 * Why a file-system step on a file or folder failed for lack of permission (EACCES, EPERM) or a read-only file system
 * (EROFS), as one line: what could not be done to which path, the file or folder in the way with its owner and mode,
 * who this process runs as, and the ways out; undefined for any other error (passed on as it is). The usual cause is a
 * second user — DATA_DIR's subfolders (outbox, recordings, inbox, inbox/failed, cache) made by whoever first started
 * the service, a command run as another (root, or `sudo -u`) — and Node's bare `EACCES: permission denied, mkdir '…'`
 * named neither.
 */
export function accessProblem(error: unknown): string | undefined {
  const e = error as (NodeJS.ErrnoException & { dest?: unknown }) | null
  if (typeof e?.path !== 'string' || (e.code !== 'EACCES' && e.code !== 'EPERM' && e.code !== 'EROFS')) return undefined
  const path = resolve(e.path)
  const step = STEPS[e.syscall ?? ''] ?? 'used'
  if (e.code === 'EROFS') return `${path} cannot be ${step}: it is on a read-only file system. Point DATA_DIR (or the setting that names it) at a folder on a writable one`
  // A move is refused by either end: the folder it leaves or the one it goes to.
  const targets = typeof e.dest === 'string' ? [path, resolve(e.dest)] : [path]
  const blocking = targets.map(inTheWay).find((found) => found !== undefined) ?? { path, need: 'read and write' }
  const owned = ownerAndMode(blocking.path)
  return `${path} cannot be ${step}: this user (${processUser()}) may not ${blocking.need} ${blocking.path === path ? 'it' : blocking.path} — permission denied${owned ? `; it is ${owned}` : ''}. Run switchboard as the user that owns it, or give this user access to it (chown or chmod)`
}

/** What Node's syscall names were doing, as said in the line. */
const STEPS: Readonly<Record<string, string>> = {
  mkdir: 'created',
  open: 'opened',
  scandir: 'listed',
  opendir: 'listed',
  rename: 'moved',
  unlink: 'removed',
  rm: 'removed',
  rmdir: 'removed',
  copyfile: 'copied',
  stat: 'read',
  lstat: 'read',
  access: 'used',
  read: 'read',
  write: 'written',
  chmod: 'changed',
  utime: 'changed',
}

/**
 * The file or folder that shuts this user out of `path`, and what it may not do to it: a folder on the way it may not
 * enter, the path itself it may not read or write, or the folder it is made or moved in, which it may not write in.
 * Undefined when none of them does (changed meanwhile).
 */
function inTheWay(path: string): { path: string; need: string } | undefined {
  const folders: string[] = []
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    folders.unshift(folder)
    if (dirname(folder) === folder) break
  }
  for (const folder of folders) if (!mayAccess(folder, fsConstants.X_OK)) return { path: folder, need: 'enter' }
  if (existsSync(path)) {
    const isFolder = statSync(path).isDirectory()
    if (!mayAccess(path, fsConstants.R_OK | fsConstants.W_OK | (isFolder ? fsConstants.X_OK : 0))) return { path, need: isFolder ? 'list and write in' : 'read and write' }
  }
  const parent = dirname(path)
  if (!mayAccess(parent, fsConstants.W_OK)) return { path: parent, need: 'write in' }
  return undefined
}

