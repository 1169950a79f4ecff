import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The npm packages (CommonJS, as Node's require cache lists them; an ESM package that loads one of its own files or
 * its package.json this way shows too) that `statements` leave loaded, run in a child process from the checkout's root
 * with tsx: a test's own process has loaded whatever earlier tests needed. Scoped packages by scope and name.
 */
export function packagesLoadedBy(statements: string[]): string[] {
  const script = [
    ...statements,
    "const { createRequire } = await import('node:module')",
    'const names = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes("/node_modules/")).map((k) => { const parts = k.split("/node_modules/").at(-1).split("/"); return parts[0].startsWith("@") ? parts[0] + "/" + parts[1] : parts[0] })',
    'console.log(JSON.stringify([...new Set(names)].sort()))',
  ].join(';')
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[]
}
