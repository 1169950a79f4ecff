import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, jsonNestedDeeperThan } from '../../src/utils/json-depth.ts'

describe('jsonNestedDeeperThan', () => {
  const nested = (n: number, inner = '1') => `${'['.repeat(n)}${inner}${']'.repeat(n)}`

  it('counts arrays and objects alike, up to and past the limit', () => {
    expect(jsonNestedDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false)
    expect(jsonNestedDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true)
    expect(jsonNestedDeeperThan(`${'{"a":'.repeat(5)}1${'}'.repeat(5)}`, 5)).toBe(false)
    expect(jsonNestedDeeperThan(`${'{"a":['.repeat(3)}1${']}'.repeat(3)}`, 5)).toBe(true)
  })

  it('many brackets side by side are not depth', () => {
    expect(jsonNestedDeeperThan(`[${Array(1_000).fill('{"a":[1]}').join(',')}]`, 3)).toBe(false)
  })

  it('brackets inside strings are text, escaped quotes and backslashes included', () => {
    const strings = JSON.stringify({ a: '[[[[{{{{', b: 'say \\"[[[[\\" and \\\\', c: '\\\\"' })
    expect(jsonNestedDeeperThan(strings, 1)).toBe(false)
    expect(jsonNestedDeeperThan(`[${JSON.stringify('"[[[')}, [[1]]]`, 2)).toBe(true)
    expect(jsonNestedDeeperThan(`[${JSON.stringify('\\')}, [1]]`, 2)).toBe(false)
  })
})
