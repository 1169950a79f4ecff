import { timingSafeEqual, createHash } from 'node:crypto'
import { HTTPError, type H3Event } from 'h3'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/

function sameSecret(a: string, b: string): boolean {
  // Hash first so the comparison is constant-time and never throws on a length mismatch.
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb)
}

/**
 * `/admin/*` rules: with ADMIN_TOKEN set, a matching `Authorization: Bearer` is required; without it,
 * only loopback clients are served (in-process requests, which have no socket, count as local).
 */
export function requireAdmin(event: H3Event, adminToken: string | undefined): void {
  if (adminToken) {
    const header = event.req.headers.get('authorization') ?? ''
    const match = /^Bearer\s+(.+)$/i.exec(header)
    if (!match || !sameSecret(match[1]!.trim(), adminToken)) {
      throw new HTTPError({ status: 401, message: 'admin token required (Authorization: Bearer $ADMIN_TOKEN)' })
    }
    return
  }
  const address = event.runtime?.node?.req?.socket?.remoteAddress
  if (address !== undefined && !LOOPBACK.test(address)) {
    throw new HTTPError({ status: 403, message: 'admin routes answer loopback clients only; set ADMIN_TOKEN to allow remote access' })
  }
}
