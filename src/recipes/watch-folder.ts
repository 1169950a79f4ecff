import { statSync, watch, type FSWatcher } from 'node:fs'
import { folderFingerprint } from './folder-fingerprint.ts'

export interface RecipesFolderWatch {
  close(): void
}

export interface RecipesFolderWatchOptions {
  /** Files outside the folder to watch too (a command's fixtures: `recipes test --events file.json`). */
  files?: string[]
  /** What watchedFingerprint gave when the caller last read them (default: now): a change made since is reported at once. */
  since?: string
  /** How often the folder is looked at whatever the watch says: helpers in sub-folders, a missed event (ms). */
  pollMs?: number
  /** How long after the watch's first event the folder is looked at: an editor's save is several events (ms). */
  settleMs?: number
}

/**
 * The folder's fingerprint (src/recipes/folder-fingerprint.ts) and each of `files` in the same form: path, size and
 * modification time, or only its path while it does not exist.
 */
export function watchedFingerprint(dir: string, files: readonly string[] = []): string {
  const lines = [folderFingerprint(dir)]
  for (const file of files) {
    try {
      const info = statSync(file)
      lines.push(`${file}\0${info.size}\0${info.mtimeMs}`)
    } catch {
      lines.push(`${file}\0missing`)
    }
  }
  return lines.join('\n')
}

/** A fingerprint's files (src/recipes/folder-fingerprint.ts: a line of path, size and mtime each), by path. */
function filesOf(fingerprint: string): Map<string, string> {
  const files = new Map<string, string>()
  for (const line of fingerprint.split('\n')) {
    const end = line.indexOf('\0')
    if (end > 0) files.set(line.slice(0, end), line.slice(end))
  }
  return files
}

/** The files added, removed or changed between two fingerprints, in path order. */
export function changedFiles(before: string, after: string): string[] {
  const was = filesOf(before)
  const is = filesOf(after)
  const changed = new Set<string>()
  for (const [path, state] of is) if (was.get(path) !== state) changed.add(path)
  for (const path of was.keys()) if (!is.has(path)) changed.add(path)
  return [...changed].sort()
}

/**
 * Calls `onChange` with the files of a recipes folder (sub-folders such as `lib/` included: what a reload reads), and
 * of `options.files`, that were added, removed or changed — one call at a time: a change made while `onChange` runs is
 * reported once it has finished. The folder's own watch makes a save seen within `settleMs`; a look every `pollMs`
 * catches what the watch does not cover (files in sub-folders, `options.files`) or misses (an editor's atomic save,
 * seen once and then never again on Linux: the engine's watch says more). A look compares sizes and modification
 * times, so a watch event that changed neither (a file opened or read) calls nothing.
 */
export function watchRecipesFolder(dir: string, onChange: (changed: string[]) => Promise<void>, options: RecipesFolderWatchOptions = {}): RecipesFolderWatch {
  const pollMs = options.pollMs ?? 500
  const settleMs = options.settleMs ?? 100
  const files = options.files ?? []
  let last = options.since ?? watchedFingerprint(dir, files)
  let busy = false
  let closed = false
  let settle: NodeJS.Timeout | undefined

  const look = async (): Promise<void> => {
    if (busy || closed) return
    const now = watchedFingerprint(dir, files)
    const changed = changedFiles(last, now)
    if (changed.length === 0) return
    busy = true
    last = now
    try {
      await onChange(changed)
    } finally {
      busy = false
    }
    await look()
  }
  const lookSoon = () => {
    clearTimeout(settle)
    settle = setTimeout(() => void look(), settleMs)
  }

  let watcher: FSWatcher | undefined
  try {
    watcher = watch(dir, lookSoon)
    // A folder removed or unreadable: the polling below still looks (and sees its files gone, or back).
    watcher.on('error', () => watcher?.close())
  } catch {
    watcher = undefined
  }
  const poll = setInterval(() => void look(), pollMs)
  return {
    close() {
      closed = true
      clearTimeout(settle)
      clearInterval(poll)
      watcher?.close()
    },
  }
}
