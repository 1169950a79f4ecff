import { isIPv6 } from 'node:net'

/**
 * `http://host:port` at which a server listening on `host` (HOST, `--host`) can be reached from this machine:
 * its own requests to itself (the sandbox's webhooks, the sandbox upstream) and the addresses it prints.
 *
 * A wildcard is not an address to connect to: `0.0.0.0` (or no host) becomes 127.0.0.1, and so does `::`,
 * which on Linux (IPV6_V6ONLY off, Node's default) takes IPv4 connections too — 127.0.0.1 also works where
 * ::1 is not configured (some containers). Any other address is used as it is: a server bound to `::1`
 * refuses 127.0.0.1. An IPv6 address is bracketed, as a URL needs.
 */
export function localOrigin(host: string, port: number): string {
  const literal = isIPv6(host) ? bracketed(host) : host
  if (literal === '' || literal === '0.0.0.0' || literal === '[::]') return `http://127.0.0.1:${port}`
  return `http://${literal}:${port}`
}

/** `[::1]`: the URL parser writes every spelling of an IPv6 address one way (`0:0::0` is `[::]`). */
function bracketed(address: string): string {
  try {
    return new URL(`http://[${address}]`).hostname
  } catch {
    // A zone id (`fe80::1%eth0`), which URLs cannot carry: shown as given rather than thrown on.
    return `[${address}]`
  }
}
