/**
 * An Allow value (RFC 9110 §10.2.1) with HEAD listed wherever GET is: the proxy answers HEAD on every path it reads
 * (as GET, without the body), so a 405 there must name it too (§15.5.6: Allow lists the methods the resource supports).
 */
export function withHead(allow: string): string {
  const methods = allow.split(',').map((m) => m.trim()).filter((m) => m !== '')
  const get = methods.indexOf('GET')
  if (get === -1 || methods.includes('HEAD')) return allow
  methods.splice(get + 1, 0, 'HEAD')
  return methods.join(', ')
}
