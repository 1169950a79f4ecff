import { relative, resolve, sep } from 'node:path'
import { printable } from '../utils/printable.ts'

/**
 * Where in a recipe's own code an error came from: the first frame of its stack in one of `dirs` (the recipes folder:
 * the recipe or a helper of its own) or in `<name>.ts`, as ` (at recipes/x.ts:12:5)` — relative to the working
 * directory when inside it; '' when no frame is the recipe's. The loader keeps a recipe's lines as written, so the
 * place is the one the author's editor shows. Used by the run's record (runner.ts) and by the CLI's line for code a
 * run left behind that threw (cli-watchdog.ts).
 */
export function recipeFrame(error: unknown, dirs: readonly string[], name?: string): string {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : ''
  const roots = dirs.map((dir) => resolve(dir) + sep)
  for (const line of stack.split('\n').slice(1)) {
    const match = /\(?((?:file:\/\/)?\/[^()]+?):(\d+):(\d+)\)?\s*$/.exec(line)
    if (!match) continue
    const file = match[1]!.replace(/^file:\/\//, '')
    if (!(name !== undefined && file.endsWith(`${sep}${name}.ts`)) && !roots.some((root) => file.startsWith(root))) continue
    const shown = file.startsWith(process.cwd() + sep) ? relative(process.cwd(), file) : file
    return ` (at ${printable(shown)}:${match[2]}:${match[3]})`
  }
  return ''
}
