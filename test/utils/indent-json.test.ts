import { expect, it } from 'vitest'
import { indentJson } from '../../src/utils/indent-json.ts'

it('lays JSON out as JSON.stringify(…, null, 2) does, strings with brackets, commas, colons and escapes untouched', () => {
  for (const text of [
    '{"a":1,"b":[1,2,{}],"c":{"d":"x\\"y,:{[","e":"\\\\"},"f":[],"g":null}',
    '  { "a" : [ ] ,\r\n\t"b" : { } }  ',
    '[[1,[2]],{"k":[{"z":true,"w":-1.5}]}]',
    '[]',
    '{}',
    '"a string"',
    '12',
    '{"emoji":"😀","tab":"\\t","nested":{"deep":{"deeper":[{"x":"]}"}]}}}',
  ]) {
    expect(indentJson(text), text).toBe(JSON.stringify(JSON.parse(text), null, 2))
  }
})

it('keeps what parsing would change: long numbers, trailing zeros, exponents as written, repeated keys, escapes', () => {
  expect(indentJson('{"n":12345678901234567890,"p":1.10,"e":1E+2,"t":"a","t":"b","u":"\\u0041"}')).toBe(
    '{\n  "n": 12345678901234567890,\n  "p": 1.10,\n  "e": 1E+2,\n  "t": "a",\n  "t": "b",\n  "u": "\\u0041"\n}',
  )
})
