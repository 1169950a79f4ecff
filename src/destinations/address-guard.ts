import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'

/**
 * Refuses private, loopback, link-local and other non-public addresses (SSRF) unless
 * ALLOW_PRIVATE_DESTINATIONS is on. The check runs inside the socket's DNS lookup, on the address the
 * connection will actually use, so a name that resolves differently between a check and the connect
 * (DNS rebinding) cannot slip through; redirects go through the same lookup.
 */

const blocked = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b:1::', 48], ['100::', 64],
] as const) blocked.addSubnet(net, prefix, 'ipv6')

/** IPv4 carried inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is judged as the IPv4. */
function embeddedIpv4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (m) return m[1]
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (!hex) return undefined
  const hi = parseInt(hex[1]!, 16)
  const lo = parseInt(hex[2]!, 16)
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
}

export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(bare)
  if (family === 4) return blocked.check(bare, 'ipv4')
  if (family === 6) {
    const v4 = embeddedIpv4(bare)
    return v4 ? blocked.check(v4, 'ipv4') : blocked.check(bare, 'ipv6')
  }
  return true
}

export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError'
  readonly code = 'EBLOCKEDADDRESS'
}

/** A `lookup` for http(s).request that fails the connection when any resolved address is not public. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0)
      const list = addresses as unknown as LookupAddress[]
      const bad = allowPrivate ? undefined : list.find((a) => isPrivateAddress(a.address))
      if (bad) return callback(new BlockedAddressError(`${hostname} resolves to ${bad.address}, a private address (set ALLOW_PRIVATE_DESTINATIONS=1 to allow)`), '', 0)
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      const first = list[0]
      if (!first) return callback(new Error(`${hostname} did not resolve`), '', 0)
      callback(null, first.address, first.family)
    })
  }
}

/** Literal IPs never reach `lookup`: they are checked here, before connecting. */
export function checkLiteralHost(hostname: string, allowPrivate: boolean): void {
  const bare = hostname.replace(/^\[|\]$/g, '')
  if (!allowPrivate && isIP(bare) && isPrivateAddress(bare)) {
    throw new BlockedAddressError(`${bare} is a private address (set ALLOW_PRIVATE_DESTINATIONS=1 to allow)`)
  }
  if (!allowPrivate && /^localhost\.?$/i.test(bare)) throw new BlockedAddressError('localhost is a private address (set ALLOW_PRIVATE_DESTINATIONS=1 to allow)')
}
