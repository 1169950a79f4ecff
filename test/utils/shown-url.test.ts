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

  it('leaves a URL without credentials, or a value with nothing to hide, as it is', () => {
    expect(shownUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in')
    expect(shownUrl('not a url')).toBe('not a url')
  })

  it('hides what could be a secret in a value the URL parser refuses: drivers take some of them', () => {
    // The Postgres driver reads a space in the host, fails to resolve it, and its error named the URL (a security probe).
    expect(shownUrl('postgres://dbuser:DbPassw0rdXYZ@db host.internal:5432/db')).toBe('postgres://***@db host.internal:5432/db')
    // A raw `#` or `/` in the password: the parser reads the rest as a fragment or a path, and refuses the port.
    expect(shownUrl('postgres://app:pa#ss@127.0.0.1:5432/db')).toBe('postgres://***@127.0.0.1:5432/db')
    expect(shownUrl('postgres://app:pa/ss@127.0.0.1:5432/db')).toBe('postgres://***@127.0.0.1:5432/db')
    expect(shownUrl('postgres//app:pw@db/app')).toBe('***@db/app')
    expect(shownUrl('postgres://db host/app?password=hunter2')).toBe('postgres://db host/app?…')
  })

  it('hides everything before the last @ of a value the parser reads with the @ somewhere else than after its credentials', () => {
    // The parser takes these (an opaque path; host "app" and port "2024" with the password in the path or the query),
    // saw no credentials, and a start-up error printed the password (an operator probe).
    expect(shownUrl('postgres:/app:S3cretPw@127.0.0.1:5499/db')).toBe('***@127.0.0.1:5499/db')
    expect(shownUrl('postgres:app:S3cretPw@127.0.0.1:5499/db')).toBe('***@127.0.0.1:5499/db')
    expect(shownUrl('postgres:///app:S3cretPw@127.0.0.1:5499/db')).toBe('postgres://***@127.0.0.1:5499/db')
    expect(shownUrl('postgres://app:2024/S3cretPw@127.0.0.1:5499/db')).toBe('postgres://***@127.0.0.1:5499/db')
    expect(shownUrl('postgres://app:/S3cretPw+x@127.0.0.1:5499/db')).toBe('postgres://***@127.0.0.1:5499/db')
    expect(shownUrl('postgres://app:2024?S3cretPw@127.0.0.1:5499/db')).toBe('postgres://***@127.0.0.1:5499/db')
    expect(shownUrl('postgres://u:pw@db/app@x')).toBe('postgres://***@x')
  })
})
