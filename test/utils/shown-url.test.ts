import { describe, expect, it } from 'vitest'
import { basicAuthOf, shownUrl } from '../../src/utils/shown-url.ts'

describe('shownUrl', () => {
  it('hides every credential a URL carries — a user alone is sent as Basic auth, so it is one too', () => {
    expect(basicAuthOf(new URL('https://sk_live_abc@hooks.example.com/in'))).toBe(`Basic ${Buffer.from('sk_live_abc:').toString('base64')}`)
    expect(shownUrl('https://sk_live_abc@hooks.example.com/in')).toBe('https://***@hooks.example.com/in')
    expect(shownUrl('https://user:pass@hooks.example.com/in?x=1')).toBe('https://***@hooks.example.com/in?x=…')
    expect(shownUrl('https://:pass@hooks.example.com/in')).toBe('https://***@hooks.example.com/in')
    expect(shownUrl('postgres://app:secret@db:5432/app')).toBe('postgres://***@db:5432/app')
  })

  it('leaves a URL without credentials, or one it cannot parse, as it is', () => {
    expect(shownUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in')
    expect(shownUrl('not a url')).toBe('not a url')
  })
})
