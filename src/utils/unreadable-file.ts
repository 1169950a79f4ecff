import { accessSync, constants as fsConstants, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { ownerAndMode, processUser } from './owner-and-mode.ts'

/**
 * Why this user may not read the file at `path` a command was given (`--csv`, `--events`, `--copy-from`), as one line
 * starting with the path: the file's owner and mode, or those of the folder on the way it may not enter, and the ways
 * out; undefined when it may read it, or when something else is wrong (not there: the caller says so its own way). A
 * file another user keeps to themselves (0600, or in their 0700 folder) was Node's bare `EACCES: permission denied,
 * open '…'`, or was said not to be there.
 */
export function unreadableFileProblem(path: string): string | undefined {
  try {
    statSync(path)
  } catch (error) {
    if (!isDenied(error)) return undefined
    // A folder on the way this user may not enter: the nearest one it can see is the one that shuts it out.
    let folder = dirname(path)
    while (ownerAndMode(folder) === undefined && dirname(folder) !== folder) folder = dirname(folder)
    return `${path} cannot be read by this user (${processUser()}) — permission denied; ${folder} is ${ownerAndMode(folder) ?? 'not open to it'}: give this user access (chmod or chown), or copy the file where this user may read it`
  }
  try {
    accessSync(path, fsConstants.R_OK)
  } catch (error) {
    if (isDenied(error)) return `${path} cannot be read by this user (${processUser()}) — permission denied; the file is ${ownerAndMode(path)}: give this user read access (chmod or chown), or copy it where this user may read it`
  }
  return undefined
}

function isDenied(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'EACCES' || code === 'EPERM'
}
