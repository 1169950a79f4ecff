import { isAbsolute, relative } from 'node:path'

/**
 * A file as a command line typed in `cwd` can name it: relative to `cwd` when the file is inside it, its whole path
 * otherwise (`../../elsewhere/x.ts` from a sibling folder is harder to read and breaks when the reader moves).
 */
export function shownPath(file: string, cwd = process.cwd()): string {
  const rel = relative(cwd, file)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file
}
