import { expect, it } from 'vitest'
import { oneBodyRecipe } from './one-body-recipe.ts'

/** ctx.state keeps JSON: null comes back as null, and a value JSON cannot keep is refused, not stored as something else. */
const h = oneBodyRecipe()

const errorOf = async (body: string, dryRun: boolean) => (await h.run(body, dryRun)).error?.replace(/ \(at [^()]*\)$/, '') ?? null

it('a key set to null reads back null; a missing key undefined (dry run and real run)', async () => {
  for (const dryRun of [true, false]) {
    const result = await h.run(`await ctx.state.set('n', null)
      const n = await ctx.state.get('n')
      const missing = await ctx.state.get('missing')
      return { n: n === null ? 'null' : typeof n, missing: missing === undefined ? 'undefined' : typeof missing }`, dryRun)
    expect(result.summary).toEqual({ n: 'null', missing: 'undefined' })
  }
  // And between runs: read by a dry run from what the real run stored.
  expect((await h.run(`const n = await ctx.state.get('n'); return n === null ? 'null' : typeof n`, true)).summary).toBe('null')
})

it('refuses a value JSON cannot keep, naming ctx.state.set and what is wrong, on one line', async () => {
  const cases: Array<[string, RegExp]> = [
    [`() => 1`, /value is a function/],
    [`{ f: Symbol('s') }`, /value\.f is a symbol/],
    [`NaN`, /value is NaN/],
    [`[1, Infinity]`, /value\[1\] is Infinity/],
    [`10n`, /value is a BigInt/],
    [`(() => { const a: Record<string, unknown> = {}; a.self = a; return a })()`, /value\.self refers back to itself \(a cycle\)/],
    [`new Map([['a', 1]])`, /value is a Map/],
    [`{ seen: new Set([1]) }`, /value\.seen is a Set/],
  ]
  for (const dryRun of [true, false]) {
    for (const [value, problem] of cases) {
      const error = await errorOf(`await ctx.state.set('k', ${value})`, dryRun)
      expect(error).toMatch(/^ctx\.state\.set\(key, value\): /)
      expect(error).toMatch(problem)
      expect(error).not.toMatch(/\n|serialize|Converting circular/)
    }
  }
  expect(await errorOf(`await ctx.state.set('k', { at: new Date(0), list: [1, 'a', null, { b: true }] })`, false)).toBeNull()
})
