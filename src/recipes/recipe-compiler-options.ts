import { join } from 'node:path'

/**
 * The compiler options recipes are type-checked with, as a tsconfig.json writes them: read by `recipes check`, the
 * service's type check (src/recipes/typecheck.ts converts them) and the editor's tsconfig.json of a recipes folder
 * (src/recipes/editor-tsconfig.ts), so the three cannot drift apart. `root` is the installation: `switchboard` maps to
 * its `src/index.ts` and Node's types to its `@types/node`, so a folder anywhere is checked the same way.
 *
 * Close to the project's tsconfig, minus what suits a codebase but not a user's recipe folder: `Bundler` resolution (a
 * folder outside the checkout has no package.json saying it is ESM, and NodeNext would read its files as CommonJS), no
 * `verbatimModuleSyntax`, no `noUncheckedIndexedAccess`, and no DOM library: recipes run in Node, where `document` or
 * `localStorage` do not exist (what Node has — fetch, URL, TextEncoder, AbortController — @types/node declares), and
 * lib.dom was a fifth of every check's parsing.
 */
export function recipeCompilerOptionsJson(root: string) {
  return {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    // ES2024.String: switchboard's own sources (which `switchboard` resolves to) use String#isWellFormed; without it a
    // recipe folder's `tsc -p` failed on them.
    lib: ['ES2023', 'ES2024.String'],
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    skipLibCheck: true,
    esModuleInterop: true,
    resolveJsonModule: true,
    isolatedModules: true,
    types: ['node'],
    typeRoots: [join(root, 'node_modules/@types')],
    paths: { switchboard: [join(root, 'src/index.ts')] },
  }
}
