import { dirname, relative, resolve } from 'node:path'
import type { RecipeDiagnostic } from './diagnostic.ts'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type TypeScript from 'typescript'

// Required, not imported: TypeScript is one 9 MB CommonJS file, and an ESM import of it first has Node scan the
// whole file for its export names (loaded alone: 0.6 s imported against 0.25 s required; `recipes check` 0.1 s faster).
const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript

/**
 * Type-checks recipe files with TypeScript's compiler API against the running service's public API:
 * `switchboard` maps to this checkout's `src/index.ts`, and `node:*` to the service's @types/node, so a
 * recipe folder anywhere (RECIPES_DIR=/elsewhere) is checked the same way, with no tsconfig of its own.
 * This module loads the compiler (large): the service reaches it only off its start path (a worker).
 */
export { formatDiagnostic, type RecipeDiagnostic } from './diagnostic.ts'
import { recipeCompilerOptionsJson } from './recipe-compiler-options.ts'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const PUBLIC_API_FILE = resolve(ROOT, 'src/index.ts')

/** The options of src/recipes/recipe-compiler-options.ts, as the compiler API takes them. */
export const RECIPE_COMPILER_OPTIONS: TypeScript.CompilerOptions = compilerOptions()

function compilerOptions(): TypeScript.CompilerOptions {
  const converted = ts.convertCompilerOptionsFromJson(recipeCompilerOptionsJson(ROOT), ROOT)
  if (converted.errors.length > 0) throw new Error(`recipe compiler options: ${ts.flattenDiagnosticMessageText(converted.errors[0]!.messageText, ' ')}`)
  return converted.options
}

let previous: TypeScript.Program | undefined
let host: TypeScript.CompilerHost | undefined
/**
 * The files the last program parsed, by name, with the options they were parsed with. A file whose text has not
 * changed since is handed to the next program as it is, parsed and bound: of a check against switchboard's ~800 files
 * (its sources, @types/node, kysely, zod…) parsing and binding were ~1.5 s of ~2.4, so a second check in the same
 * thread (a recipe edited, another folder) took ~1.5 s where it now takes ~0.3 s. Replaced by each program's files,
 * so it holds no more than the last program does.
 */
const parsed = new Map<string, ParsedFile>()
interface ParsedFile {
  file: TypeScript.SourceFile
  /** The parse's language version and settings, as the program asked for them. */
  options: string
}

/**
 * Skips the doc comments of TypeScript files (as tsc does): they cannot make a type error, and parsing them cost a
 * tenth of each check. Reuses an unchanged file's parse (`parsed`); every file is read again, so an edit is seen.
 */
function compilerHost(): TypeScript.CompilerHost {
  if (host) return host
  const created = ts.createCompilerHost(RECIPE_COMPILER_OPTIONS)
  created.jsDocParsingMode = ts.JSDocParsingMode.ParseForTypeErrors
  created.getSourceFile = (fileName, languageVersionOrOptions, onError) => {
    let text: string | undefined
    try {
      text = created.readFile(fileName)
    } catch (error) {
      onError?.((error as Error).message)
      text = ''
    }
    if (text === undefined) return undefined
    const options = JSON.stringify(languageVersionOrOptions)
    const known = parsed.get(fileName)
    if (known && known.file.text === text && known.options === options) return known.file
    const file = ts.createSourceFile(fileName, text, languageVersionOrOptions)
    parsed.set(fileName, { file, options })
    return file
  }
  return (host = created)
}

/** Keeps the files of `program` (and no others) for the next one to reuse. */
function keepParsed(program: TypeScript.Program): void {
  const kept = new Set(program.getSourceFiles())
  for (const [name, entry] of parsed) if (!kept.has(entry.file)) parsed.delete(name)
}

/**
 * Diagnostics of `files` (and of helper files they import from the same folders), errors only, in file
 * order. Keeps the last program so a second check in the same process reuses the parsed service types.
 */
export function typeCheckFiles(files: string[]): RecipeDiagnostic[] {
  const roots = files.map((f) => resolve(f))
  const program = ts.createProgram({ rootNames: roots, options: RECIPE_COMPILER_OPTIONS, host: compilerHost(), oldProgram: previous })
  previous = program
  keepParsed(program)
  const folders = new Set(roots.map((f) => dirname(f)))
  const ours = (file: string) => [...folders].some((dir) => !relative(dir, file).startsWith('..'))
  const out: RecipeDiagnostic[] = []
  const seen = new Set<string>()
  const add = (d: TypeScript.Diagnostic) => {
    if (d.category !== ts.DiagnosticCategory.Error) return
    let message = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0]!.trim()
    // TS2584 suggests adding the DOM library, which a recipe's author cannot do and which would not make it run.
    if (d.code === 2584) message = message.replace(/\. Do you need to change your target library\?.*$/, ': recipes run in Node, which has no browser globals')
    let file = ''
    let line = 0
    let column = 0
    if (d.file && d.start !== undefined) {
      file = resolve(d.file.fileName)
      const pos = d.file.getLineAndCharacterOfPosition(d.start)
      line = pos.line + 1
      column = pos.character + 1
    }
    const key = `${file}:${line}:${column}:${d.code}`
    if (seen.has(key)) return
    seen.add(key)
    out.push({ file, line, column, message, code: d.code })
  }
  for (const d of program.getOptionsDiagnostics()) add(d)
  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile || !ours(resolve(sf.fileName)) || resolve(sf.fileName) === PUBLIC_API_FILE) continue
    for (const d of program.getSyntacticDiagnostics(sf)) add(d)
    for (const d of program.getSemanticDiagnostics(sf)) add(d)
  }
  return out
}

/**
 * Each recipe's first type error: in its own file, else in a helper file of its folders it imports (directly or
 * through other helpers) — a helper's error breaks every recipe that uses it, as it breaks `recipes check`. It was
 * the recipe's own file only: a recipe whose `lib/` helper did not type-check ran all the same. Null: clean.
 */
export function typeCheckRecipes(files: string[]): Record<string, RecipeDiagnostic | null> {
  const roots = files.map((f) => resolve(f))
  const diagnostics = typeCheckFiles(roots)
  const program = previous!
  const folders = [...new Set(roots.map((f) => dirname(f)))]
  const ours = (file: string) => folders.some((dir) => !relative(dir, file).startsWith('..')) && !file.includes('/node_modules/')
  const firstIn = new Map<string, RecipeDiagnostic>()
  for (const d of diagnostics) if (d.file && !firstIn.has(d.file)) firstIn.set(d.file, d)
  const verdicts: Record<string, RecipeDiagnostic | null> = {}
  for (const root of roots) {
    let first: RecipeDiagnostic | null = null
    for (const file of localImports(program, root, ours)) {
      first = firstIn.get(file) ?? null
      if (first) break
    }
    verdicts[root] = first
  }
  return verdicts
}

/**
 * The module names a file imports: static imports and re-exports, and `import('…')` with a literal name anywhere in it
 * (the program checks a dynamically imported helper too, so `recipes check` reported its errors while the recipe's
 * verdict missed them).
 */
function importedNames(source: TypeScript.SourceFile): string[] {
  const names: string[] = []
  const visit = (node: TypeScript.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) names.push(node.moduleSpecifier.text)
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) names.push(node.arguments[0].text)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return names
}

/** `root`, then the files of its folders it imports, breadth first (see importedNames). */
function localImports(program: TypeScript.Program, root: string, ours: (file: string) => boolean): string[] {
  const reached = [root]
  for (let i = 0; i < reached.length; i++) {
    const from = reached[i]!
    const source = program.getSourceFile(from)
    if (!source) continue
    for (const specifier of importedNames(source)) {
      const target = ts.resolveModuleName(specifier, from, RECIPE_COMPILER_OPTIONS, compilerHost()).resolvedModule?.resolvedFileName
      if (target === undefined) continue
      const file = resolve(target)
      if (ours(file) && !reached.includes(file)) reached.push(file)
    }
  }
  return reached
}
