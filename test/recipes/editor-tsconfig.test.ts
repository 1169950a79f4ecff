import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import type TypeScript from 'typescript'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { checkoutRecipesTsconfig, EDITOR_TSCONFIG_MARK, editorTsconfig, ensureEditorTsconfig } from '../../src/recipes/editor-tsconfig.ts'
import { RECIPE_COMPILER_OPTIONS, typeCheckFiles } from '../../src/recipes/typecheck.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * A recipes folder outside the checkout gets a tsconfig.json from `recipes new`, so an editor resolves
 * `import … from 'switchboard'` and reports what `recipes check` reports — not a red line under every import.
 */
const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript
const ROOT = resolve(import.meta.dirname, '../..')

let folder: ReturnType<typeof tempRecipesDir> | undefined
afterEach(() => {
  folder?.cleanup()
  folder = undefined
})

/** What an editor's TypeScript makes of the folder: its tsconfig.json read as tsc reads it, then every file checked. */
function asAnEditorSees(dir: string): { options: TypeScript.CompilerOptions; errors: string[] } {
  const file = join(dir, 'tsconfig.json')
  const read = ts.readConfigFile(file, (f) => ts.sys.readFile(f))
  expect(read.error).toBeUndefined()
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dir, undefined, file)
  expect(parsed.errors).toEqual([])
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options })
  // As an editor shows them: for the folder's own files (switchboard's sources are checked by its own suite).
  const own = program.getSourceFiles().filter((sf) => sf.fileName.startsWith(`${dir}/`))
  const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(), ...own.flatMap((sf) => [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)])]
  const errors = diagnostics.map((d) => {
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined
    return `${d.file ? d.file.fileName.slice(dir.length + 1) : ''}${at ? `:${at.line + 1}:${at.character + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0]}`
  })
  return { options: parsed.options, errors }
}

const RECIPE = `import { defineRecipe } from 'switchboard'
import { greeting } from './lib/greeting.ts'

export default defineRecipe({
  description: 'greets',
  schedule: '0 8 * * *',
  async run(ctx) {
    const missed = await ctx.data.conversations({ status: 'no_answer', limit: 5 })
    return greeting(String(missed.length))
  },
})
`

describe('the editor tsconfig.json of a recipes folder', () => {
  it('has the options recipes check uses, switchboard resolved: an editor reports what recipes check reports', () => {
    folder = tempRecipesDir()
    folder.write('greet', RECIPE)
    folder.write('lib/greeting', `export const greeting = (who: string): string => 'hello ' + who\n`)
    expect(ensureEditorTsconfig(folder.dir)).toBe('written')

    const clean = asAnEditorSees(folder.dir)
    expect(clean.errors).toEqual([])
    // Option by option, as the checker sets them (its paths and type roots are this checkout's, as written).
    const { configFilePath: _path, pathsBasePath: _base, ...options } = clean.options
    const { pathsBasePath: _checkerBase, ...checker } = RECIPE_COMPILER_OPTIONS
    expect(options).toEqual(checker)
    expect(typeCheckFiles([join(folder.dir, 'greet.ts')])).toEqual([])

    folder.write('greet', RECIPE.replace('greeting(String(missed.length))', 'greeting(missed.length)'))
    const broken = asAnEditorSees(folder.dir)
    const checked = typeCheckFiles([join(folder.dir, 'greet.ts')])
    expect(checked).toHaveLength(1)
    expect(broken.errors).toEqual([`greet.ts:${checked[0]!.line}:${checked[0]!.column} ${checked[0]!.message}`])
    // Four cold TypeScript programs: 5 s alone, past the default 20 s with the whole suite on two cores.
  }, 60_000)

  it('is written where there is none, rewritten when it names another installation, and never over the user\'s own', () => {
    folder = tempRecipesDir()
    expect(ensureEditorTsconfig(folder.dir)).toBe('written')
    expect(ensureEditorTsconfig(folder.dir)).toBe('unchanged')
    const file = join(folder.dir, 'tsconfig.json')
    expect(readFileSync(file, 'utf8')).toBe(editorTsconfig())

    // The checkout moved (or another installation wrote it): ours is written again, pointing here.
    writeFileSync(file, editorTsconfig('/opt/old-switchboard'))
    expect(ensureEditorTsconfig(folder.dir)).toBe('updated')
    expect(readFileSync(file, 'utf8')).toBe(editorTsconfig())
    expect(readFileSync(file, 'utf8')).toContain(join(ROOT, 'src/index.ts'))

    // The user's own (or ours with the first line removed to keep edits): left as it is.
    const theirs = readFileSync(file, 'utf8').split('\n').slice(1).join('\n').replace('"strict": true', '"strict": false')
    writeFileSync(file, theirs)
    expect(ensureEditorTsconfig(folder.dir)).toBe('theirs')
    expect(readFileSync(file, 'utf8')).toBe(theirs)
    expect(editorTsconfig().startsWith(EDITOR_TSCONFIG_MARK)).toBe(true)
  })

  it('is not written in the checkout\'s recipes/ folder, which the checkout\'s own tsconfig.json covers', () => {
    const root = mkdtempSync(join(tmpdir(), 'sb-checkout-'))
    try {
      writeFileSync(join(root, 'tsconfig.json'), '{}')
      mkdirSync(join(root, 'recipes/lib'), { recursive: true })
      expect(ensureEditorTsconfig(join(root, 'recipes'), root)).toBe('covered')
      expect(ensureEditorTsconfig(join(root, 'recipes/lib'), root)).toBe('covered')
      mkdirSync(join(root, 'data/recipes'), { recursive: true })
      expect(ensureEditorTsconfig(join(root, 'data/recipes'), root)).toBe('written')
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('recipes new writes it and says so', async () => {
    folder = tempRecipesDir()
    const data = mkdtempSync(join(tmpdir(), 'sb-new-tsconfig-'))
    try {
      let out = ''
      const code = await main(['recipes', 'new', 'missed-calls'], {
        env: { DATA_DIR: data, RECIPES_DIR: folder.dir, LOG_LEVEL: 'silent', WEBHOOK_SECRET: 'whsec_x' },
        stdout: (t) => void (out += t),
        stderr: (t) => void (out += t),
      })
      expect(code).toBe(0)
      expect(out).toContain(`wrote ${join(folder.dir, 'tsconfig.json')}: an editor type-checks the folder as recipes check does`)
      expect(asAnEditorSees(dirname(join(folder.dir, 'missed-calls.ts'))).errors).toEqual([])
    } finally {
      rmSync(data, { recursive: true, force: true })
    }
  })
})

describe("the checkout's recipes/tsconfig.json", () => {
  it('holds the options recipes check uses — an editor in recipes/ reports what the service reports, no more, no less', () => {
    // The project's tsconfig.json covered recipes/ with DOM, noUncheckedIndexedAccess and verbatimModuleSyntax: the editor
    // marked what the service accepts (events[0].eventId) and missed what it refuses (document) — a recipe author's probe.
    const file = join(ROOT, 'recipes/tsconfig.json')
    expect(readFileSync(file, 'utf8')).toBe(checkoutRecipesTsconfig())
    const read = ts.readConfigFile(file, (f) => ts.sys.readFile(f))
    const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(file), undefined, file)
    const { configFilePath: _path, pathsBasePath: base, ...options } = parsed.options
    const { pathsBasePath: _checkerBase, ...checker } = RECIPE_COMPILER_OPTIONS
    // Its paths are relative to the folder (the checkout may be anywhere); resolved, they are the checker's.
    const resolvedPaths = Object.fromEntries(Object.entries(options.paths ?? {}).map(([k, v]) => [k, v.map((p) => resolve(String(base), p))]))
    expect({ ...options, paths: resolvedPaths }).toEqual(checker)
  })

  it("a folder's tsconfig.json type-checks with tsc -p as it is, switchboard's own sources included", () => {
    // `lib` lacked ES2024.String, which switchboard's sources use (isWellFormed): a team's CI running `tsc -p` on its
    // recipes repository failed on four errors in files it does not own.
    folder = tempRecipesDir()
    folder.write('greet', RECIPE)
    folder.write('lib/greeting', `export const greeting = (who: string): string => 'hello ' + who\n`)
    ensureEditorTsconfig(folder.dir)
    const file = join(folder.dir, 'tsconfig.json')
    const read = ts.readConfigFile(file, (f) => ts.sys.readFile(f))
    const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, folder.dir, undefined, file)
    const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options })
    const errors = ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName ?? ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0]}`)
    expect(errors).toEqual([])
  }, 60_000)
})
