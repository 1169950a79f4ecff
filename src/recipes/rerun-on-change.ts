import { shownPath } from '../utils/shown-path.ts'
import { waitForStopSignal } from '../utils/stop-signal.ts'
import { watchRecipesFolder } from './watch-folder.ts'

/** The local time of day, for the line each run again starts with. */
const timeOfDay = (date = new Date()) => date.toTimeString().slice(0, 8)

export interface RerunOnChangeOptions {
  /** The recipes folder (sub-folders such as `lib/` included). */
  dir: string
  /** Files outside it that the command reads (fixtures). */
  files?: string[]
  /** watchedFingerprint(dir, files) from before the first run: a save during it is run again at once. */
  since: string
  /** What the line about a change says is done about it, e.g. "checking again". */
  again: string
  /** Writes the lines about watching (stdout, or stderr where stdout carries JSON). */
  say(text: string): void
  /** Runs the command again and prints what it found; a thrown error is said on one line and the watch goes on. */
  rerun(): Promise<void>
  /** Resolves when nobody reads the command's output any more (stdout's pipe closed): the watch ends, exit 0. */
  readerGone?: Promise<void>
}

/**
 * The `--watch` of `recipes check` and `recipes test`, after their first run: runs again whenever a file of the folder
 * (or one of `files`) changes, with a line naming what changed, until SIGINT or SIGTERM (Ctrl-C); then says so and
 * gives exit code 0 — or, once whoever read its output has gone (`| head`), ends there with 0. Runs never overlap: a save
 * during a run is run after it.
 */
export async function rerunOnChange(options: RerunOnChangeOptions): Promise<number> {
  const { say } = options
  say(`watching ${shownPath(options.dir)}${options.files?.length ? ` and ${options.files.map((f) => shownPath(f)).join(', ')}` : ''} for changes (Ctrl-C to stop)\n`)
  const signal = waitForStopSignal()
  const watching = watchRecipesFolder(
    options.dir,
    async (changed) => {
      const shown = changed.slice(0, 3).map((f) => shownPath(f)).join(', ') + (changed.length > 3 ? ` and ${changed.length - 3} more` : '')
      say(`\n[${timeOfDay()}] ${shown} changed: ${options.again}\n`)
      try {
        await options.rerun()
      } catch (error) {
        // The recipe named went away (renamed, deleted), a fixture is not readable yet: said, and watched for a fix.
        say(`error: ${(error as Error).message}\n`)
      }
    },
    { since: options.since, ...(options.files ? { files: options.files } : {}) },
  )
  try {
    const gone = await Promise.race([signal.stopped.then(() => false), options.readerGone?.then(() => true) ?? new Promise<boolean>(() => {})])
    // Nobody reads what a run would print: nothing to say it to either.
    if (gone) return 0
  } finally {
    watching.close()
    signal.release()
  }
  say('stopped watching\n')
  return 0
}
