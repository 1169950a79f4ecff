import { CliError } from '../cli-kit.ts'
import { ArgumentError } from '../utils/argument-error.ts'
import { findRecipeFile } from './find-recipe-file.ts'

/** For a command: the file of the recipe `name` names (see findRecipeFile); a name that is no recipe is a mistake (exit 2). */
export function namedRecipeFile(name: string, dir: string): string {
  try {
    return findRecipeFile(name, dir)
  } catch (error) {
    if (error instanceof ArgumentError) throw new CliError(error.message)
    throw error
  }
}
