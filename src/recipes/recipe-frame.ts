import { relative, resolve, sep } from 'node:path'
import { printable } from '../utils/printable.ts'
import { sourcePosition } from './source-position.ts'

/**
 * Where in a recipe's own code an error came from: the first frame of its stack in one of `dirs` (the recipes folder:
 * the recipe or a helper of its own) or in `<name>.ts`, as ` (at recipes/x.ts:12:5)` — relative to the working
 * directory when inside it; '' when no frame is the recipe's. The place is the one the author's editor shows, in the
 * file as written (src/recipes/source-position.ts). Used by the run's record (runner.ts) and by the CLI's line for code a
 * run left behind that threw (cli-watchdog.ts).
 */
export function recipeFrame(error: unknown, dirs: readonly string[], name?: string): string {
  const roots = recipeRoots(dirs)
  for (const frame of stackFrames(error)) {
    if (!(name !== undefined && frame.file.endsWith(`${sep}${name}.ts`)) && !inRoots(frame.file, roots)) continue
    const shown = frame.file.startsWith(process.cwd() + sep) ? relative(process.cwd(), frame.file) : frame.file
    const { line, column } = sourcePosition(frame.file, frame.line, frame.column)
    return ` (at ${printable(shown)}:${line}:${column})`
  }
  return ''
}

/** A stack frame with a file of this machine's: its path (a `file://` URL read as one), line and column. */
export interface StackFrame {
  file: string
  line: number
  column: number
}

/**
 * The frames of `error`'s stack that name a file, innermost first; Node's own (`node:internal/timers:581:17`) are not
 * files. Shared by recipeFrame and uncaught-recipe-errors.ts, which reads the outermost.
 */
export function stackFrames(error: unknown): StackFrame[] {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : ''
  const frames: StackFrame[] = []
  for (const line of stack.split('\n').slice(1)) {
    // A path right after `at ` (`at async `) or `(`: `node:internal/timers` holds a slash too.
    const match = /(?:\(|at (?:async )?)((?:file:\/\/)?\/[^()]+?):(\d+):(\d+)\)?\s*$/.exec(line)
    if (match) frames.push({ file: match[1]!.replace(/^file:\/\//, ''), line: Number(match[2]), column: Number(match[3]) })
  }
  return frames
}

/** The recipes folders as path prefixes. */
export function recipeRoots(dirs: readonly string[]): string[] {
  return dirs.map((dir) => resolve(dir) + sep)
}

export function inRoots(file: string, roots: readonly string[]): boolean {
  return roots.some((root) => file.startsWith(root))
}
