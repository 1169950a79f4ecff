import { resolve } from 'node:path'
import ts from 'typescript'

/**
 * Every member of `RecipeContext`, read from the types with TypeScript's checker: `ctx.name`, …, and one
 * level into the object members (`ctx.data.conversations`, `ctx.campaigns.scheduleCall`, …), each with
 * its doc comment. What docs/recipes.md is checked against.
 */
export interface ApiMember {
  path: string
  doc: string
}

const GROUPS = ['data', 'campaigns', 'reports', 'mail', 'state']

export function recipeContextMembers(): ApiMember[] {
  const file = resolve(import.meta.dirname, '../../src/recipes/define.ts')
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true, noEmit: true, strict: true, skipLibCheck: true, types: ['node'],
  })
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(file)!
  const symbol = checker.getSymbolAtLocation(source)!
  const context = checker.getExportsOfModule(symbol).find((s) => s.name === 'RecipeContext')!
  const type = checker.getDeclaredTypeOfSymbol(context)
  const own = (s: ts.Symbol) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim()
  // `ctx.campaigns` spreads the toolkit module: its pure helpers carry their docs on their own declarations.
  const toolkitFile = program.getSourceFile(resolve(import.meta.dirname, '../../src/campaigns/index.ts'))!
  const toolkit = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(toolkitFile)!).map((s) => [s.name, checker.getAliasedSymbol(s)]))
  const doc = (s: ts.Symbol) => own(s) || (toolkit.has(s.name) ? own(toolkit.get(s.name)!) : '')
  const out: ApiMember[] = []
  for (const prop of type.getProperties()) {
    out.push({ path: `ctx.${prop.name}`, doc: doc(prop) })
    if (!GROUPS.includes(prop.name)) continue
    const inner = checker.getTypeOfSymbol(prop)
    for (const member of inner.getProperties()) out.push({ path: `ctx.${prop.name}.${member.name}`, doc: doc(member) })
  }
  return out
}
