import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { shownPath } from '../utils/shown-path.ts'

/** The checkout's sample files (`data/samples/`). */
const SAMPLES = resolve(fileURLToPath(new URL('../../data/samples', import.meta.url)))

/**
 * A sample file as a command line typed here can name it: relative to the working directory inside the checkout
 * (`data/samples/leads.csv` at its root), its whole path from anywhere else — a hint naming `data/samples/…` sent a
 * user whose recipes folder is elsewhere (RECIPES_DIR=/srv/recipes) to a file that is not there.
 */
export function samplePath(name: string, cwd = process.cwd()): string {
  return shownPath(join(SAMPLES, name), cwd)
}
