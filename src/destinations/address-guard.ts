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
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4')
/**
 * IPv6 is judged by what is public rather than by a list of what is not: only global unicast (2000::/3) can be, so
 * whatever else there is — loopback, unspecified, IPv4-compatible `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`,
 * unique-local, link-local, the deprecated site-local fec0::/10, multicast, discard, ranges assigned later — is refused
 * without having to be named. Inside it, the ranges that are not public either: IETF protocol assignments (Teredo,
 * ORCHID, benchmarking), 6to4 (a tunnel to an IPv4 address of the sender's choosing) and documentation.
 */
const globalUnicast = new BlockList()
globalUnicast.addSubnet('2000::', 3, 'ipv6')
for (const [net, prefix] of [
  ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['3fff::', 20],
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
    if (v4) return blocked.check(v4, 'ipv4')
    return !globalUnicast.check(bare, 'ipv6') || blocked.check(bare, 'ipv6')
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
