import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { nodeTooOld, OLDEST_NODE } from '../../src/node-version.mjs'

/**
 * On a Node.js older than the engines field, `npm install` stops with "Unsupported engine" (.npmrc: engine-strict), and
 * `npm start` or the CLI — on a Node switched to after the install — says which Node it needs, instead of failing
 * somewhere in a dependency without saying why.
 */
const ROOT = new URL('../../', import.meta.url)

it('the oldest Node named is the engines field, and npm install refuses an older one', () => {
  const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { engines: { node: string } }
  expect(pkg.engines.node).toBe(`>=${OLDEST_NODE.replace(/\.0$/, '')}`)
  expect(readFileSync(new URL('.npmrc', ROOT), 'utf8')).toMatch(/^engine-strict=true$/m)
  expect(nodeTooOld(process.versions.node)).toBeUndefined()
  expect(nodeTooOld('20.19.0')).toBeUndefined()
  expect(nodeTooOld('22.1.0')).toBeUndefined()
  expect(nodeTooOld('20.18.3')).toMatch(/^switchboard needs Node\.js 20\.19\.0 or newer; this is 20\.18\.3 \(/)
  expect(nodeTooOld('18.19.1')).toMatch(/this is 18\.19\.1/)
})

it('the CLI on an older Node exits 1 with one line saying which Node it needs', () => {
  // The Node 18 of Ubuntu 24.04's packages, say: the version it reports is all the check reads.
  const fake = `data:text/javascript,Object.defineProperty(process.versions, 'node', { value: '18.19.1' })`
  const run = spawnSync(process.execPath, ['--import', fake, 'src/bin.mjs', 'serve'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PORT: '0' } })
  expect(run.status).toBe(1)
  expect(run.stdout).toBe('')
  expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: switchboard needs Node\.js 20\.19\.0 or newer; this is 18\.19\.1 \(.*\)\. Install a current Node\.js/)])
})
