import { describe, expect, it } from 'vitest'
import { tenantOf } from '../../src/calls/tenant.ts'

describe('tenantOf', () => {
  it('is the first 40 hex digits of the key\'s SHA-256, as stored since the first release', () => {
    // FIPS 180-2's test vector: tenants already in a database must keep matching their keys.
    expect(tenantOf('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a3')
    // Hashed as UTF-8: "é" is the bytes c3 a9 (as Latin-1, the single byte e9 would give de2e331d891ae267a7009cb45b4e8830f170e0c9).
    expect(tenantOf('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f')
    expect(tenantOf('sk_a')).not.toBe(tenantOf('sk_b'))
  })
})
