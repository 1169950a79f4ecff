import { statSync } from 'node:fs'

/** Which file a path named when it was opened: its device and inode. */
export interface FileIdentity {
  dev: number
  ino: number
}

/** The identity of the file at `path` now, or undefined when there is none. */
export function fileIdentity(path: string): FileIdentity | undefined {
  try {
    const { dev, ino } = statSync(path)
    return { dev, ino }
  } catch {
    return undefined
  }
}

/**
 * Why the SQLite file at `path` is no longer the one the service opened (`opened`), or undefined while it is. Removed
 * or replaced under a running service (an operator's `rm` to "reset" it, a restore copied over it), the connections
 * go on writing to the file they hold open, which no path names any more: every webhook answered 204 into it was gone
 * at the next start. Reported as SQLITE_CANTOPEN — unavailable: webhooks get 503 and `/readyz` says so.
 */
export function replacedFileProblem(path: string, opened: FileIdentity): string | undefined {
  const now = fileIdentity(path)
  if (now && now.dev === opened.dev && now.ino === opened.ino) return undefined
  return replacedFileMessage(path, now ? 'replaced' : 'removed')
}

/** What replacedFileProblem says, by what became of the file (the inbox writer thread, plain JavaScript, is given both). */
export function replacedFileMessage(path: string, how: 'removed' | 'replaced'): string {
  return `the database file ${path} was ${how === 'replaced' ? 'replaced by another file' : 'removed'} while the service ran: restart the service to open what is there now (what it stored since went into the file it still holds open: copy that one from /proc/${process.pid}/fd before stopping it)`
}

/** The error replacedFileProblem's answer is raised as. */
export function replacedFileError(problem: string): Error {
  return Object.assign(new Error(problem), { code: 'SQLITE_CANTOPEN' })
}
