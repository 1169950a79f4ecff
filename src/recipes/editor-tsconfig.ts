import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { recipeCompilerOptionsJson } from './recipe-compiler-options.ts'

/** The checkout (or installation) this module runs from. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The first line of a tsconfig.json switchboard wrote: one it finds there again it may rewrite, never anyone else's. */
export const EDITOR_TSCONFIG_MARK = '// Written by switchboard (recipes new)'

/**
 * A recipes folder's tsconfig.json for an editor: the compiler options `recipes check` uses
 * (src/recipes/recipe-compiler-options.ts), with `switchboard` and Node's types mapped to this installation by path. A
 * folder outside the checkout (RECIPES_DIR=/srv/recipes, a repository of the team's own) had none: `recipes check`
 * needs none, but an editor then could not resolve `import … from 'switchboard'` and marked every line of a recipe.
 */
export function editorTsconfig(root = ROOT): string {
  const config = {
    compilerOptions: recipeCompilerOptionsJson(root),
    include: ['**/*.ts'],
    exclude: ['node_modules'],
  }
  return `${EDITOR_TSCONFIG_MARK} for editors: the options \`recipes check\` type-checks this folder with, and where
// \`switchboard\` is (${root}). Written again by \`recipes new\` if that moves; remove this line to keep your own edits.
${JSON.stringify(config, null, 2)}
`
}

/**
 * The checkout's `recipes/tsconfig.json`: the same options with the checkout's paths relative to the folder, so an
 * editor checks the team's recipes there as `recipes check` does — the project's own tsconfig.json (DOM,
 * `noUncheckedIndexedAccess`, `verbatimModuleSyntax`) marked what the service accepts and missed what it refuses
 * (`document`). `npm run typecheck` checks the folder with it; a test keeps the file equal to this.
 */
export function checkoutRecipesTsconfig(): string {
  const config = { compilerOptions: recipeCompilerOptionsJson('..'), include: ['**/*.ts'] }
  return `// The options \`recipes check\` and the service type-check recipes with (src/recipes/recipe-compiler-options.ts), for
// editors and \`npm run typecheck\`; a test keeps it equal to them.
${JSON.stringify(config, null, 2)}
`
}

/** Whether the checkout's own tsconfig.json covers `dir` (its `recipes/` folder): an editor needs nothing more there. */
function coveredByCheckout(dir: string, root: string): boolean {
  const rel = relative(join(root, 'recipes'), dir)
  return !rel.startsWith('..') && !isAbsolute(rel) && existsSync(join(root, 'tsconfig.json'))
}

/**
 * Gives a recipes folder its editor tsconfig.json (editorTsconfig) when it has none, or rewrites one switchboard wrote
 * that names another installation. A folder the checkout's tsconfig covers, or with a tsconfig.json of its user's, is
 * left as it is. Returns what it did.
 */
export function ensureEditorTsconfig(dir: string, root = ROOT): 'written' | 'updated' | 'unchanged' | 'theirs' | 'covered' {
  const folder = resolve(dir)
  if (coveredByCheckout(folder, root)) return 'covered'
  const file = join(folder, 'tsconfig.json')
  const wanted = editorTsconfig(root)
  if (!existsSync(file)) {
    writeFileSync(file, wanted)
    return 'written'
  }
  const present = readFileSync(file, 'utf8')
  if (!present.startsWith(EDITOR_TSCONFIG_MARK)) return 'theirs'
  if (present === wanted) return 'unchanged'
  writeFileSync(file, wanted)
  return 'updated'
}
