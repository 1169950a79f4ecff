import { existsSync, statSync } from 'node:fs'
import { basename, isAbsolute, join, resolve, sep } from 'node:path'
import { ArgumentError } from '../utils/argument-error.ts'
import { listRecipeFiles } from './loader.ts'

/**
 * The file a recipe command means, one rule for `recipes check` and `recipes test`: a path (it has a `/`) is that
 * file; a name, with or without `.ts`, is that recipe in RECIPES_DIR — or, when the folder has none of that name,
 * a `<name>.ts` in the working directory.
 */
export function findRecipeFile(nameOrPath: string, dir: string, cwd = process.cwd()): string {
  if (nameOrPath.includes('/') || nameOrPath.includes(sep) || isAbsolute(nameOrPath)) {
    const path = resolve(cwd, nameOrPath)
    if (!existsSync(path)) throw new ArgumentError(`no recipe file at ${path}`)
    if (!statSync(path).isFile()) throw new ArgumentError(`${path} is a folder, not a recipe file`)
    return path
  }
  const name = recipeNameOf(nameOrPath)
  const inDir = join(dir, `${name}.ts`)
  if (existsSync(inDir) && statSync(inDir).isFile()) return inDir
  const here = resolve(cwd, `${name}.ts`)
  if (nameOrPath.endsWith('.ts') && existsSync(here) && statSync(here).isFile()) return here
  const known = listRecipeFiles(dir).map((f) => basename(f, '.ts'))
  throw new ArgumentError(`no recipe named "${name}" in ${dir}${known.length ? ` (recipes: ${known.join(', ')})` : ''}`)
}

/**
 * The recipe a name argument means for the commands that take a recipe's name (`recipes run`, `runs`, `retry`,
 * `discard`): as `check` and `test` read it, `.ts` and a folder before it may be given (`missed-calls.ts`,
 * `recipes/missed-calls.ts`).
 */
export function recipeNameOf(arg: string): string {
  return arg.endsWith('.ts') ? basename(arg, '.ts') : arg
}
