import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs'
import { readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Selectable } from 'kysely'
import type { RecordingsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import type { CacheStatus } from './upstream.ts'
import { createAccessTimes } from './access-times.ts'

export type RecordingRow = Selectable<RecordingsTable>

export interface RecordingCache {
  /** The cached recording of a tenant's conversation, if its file is still on disk. */
  lookup(tenant: string, conversationId: string): Promise<RecordingRow | undefined>
  /** Writes a downloaded recording to disk under its content hash and records it with the provider's headers. */
  store(input: { tenant: string; conversationId: string; headers: Headers; body: ReadableStream<Uint8Array> }): Promise<RecordingRow>
  /** A 200, 206 or 416 for the request's method and Range header. */
  respond(row: RecordingRow, request: Request, cache: CacheStatus): Response
  touch(key: string): void
  evict(): Promise<number>
  /**
   * Removes downloads a process left behind in the temporary folder (killed mid-download: its `finally` never ran),
   * judged by the file's own modification time; returns how many.
   */
  sweepAbandoned(nowMs?: number): Promise<number>
}

/**
 * A temporary download untouched this long was abandoned: a live one is written to as its bytes arrive, and one that
 * stalls is cut off after UPSTREAM_TIMEOUT_MS of silence. Judged on the file system's clock (the file's mtime), not
 * the runtime's: whichever process, thread or replica started it.
 */
export const ABANDONED_DOWNLOAD_MS = 60 * 60 * 1000

export type ByteRange = { start: number; end: number }

/**
 * Parses a single `bytes=` range against a size: a range, 'unsatisfiable' (→ 416), or undefined for
 * "send it all" (no header, a malformed one, or several ranges, which RFC 9110 lets a server ignore).
 */
export function parseRange(header: string | null, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (!match) return undefined
  const [, from, to] = match
  if (from === '' && to === '') return undefined
  if (from === '') {
    const suffix = Number(to)
    if (suffix === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(from)
  const end = to === '' ? size - 1 : Number(to)
  if (to !== '' && end < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

const CHUNK = 200

/**
 * The provider's headers that describe the file rather than the moment: kept with it and replayed on every
 * answer (HIT, STALE, Range), so a browser still saves `<id>.wav` and caches it as the provider allows.
 */
export const RECORDING_HEADERS = ['content-disposition', 'cache-control'] as const

function keptHeaders(from: Headers): string | null {
  const kept: Record<string, string> = {}
  for (const name of RECORDING_HEADERS) {
    const value = from.get(name)
    if (value !== null) kept[name] = value
  }
  return Object.keys(kept).length ? JSON.stringify(kept) : null
}

/**
 * Recordings cached on disk under DATA_DIR/recordings, each file named by the SHA-256 of its bytes (so
 * an id can never become a path, and equal audio is stored once), indexed in `recordings` per tenant.
 */
export function createRecordingCache(rt: Runtime): RecordingCache {
  const db = rt.store.db
  const dir = join(rt.config.dataDir, 'recordings')
  const tmp = join(dir, 'tmp')
  mkdirSync(tmp, { recursive: true })
  const accessTimes = createAccessTimes(rt, 'recordings')

  const flush = () => accessTimes.flush()

  async function removeUnreferenced(files: string[]): Promise<void> {
    for (const file of new Set(files)) {
      const still = await db.selectFrom('recordings').select('key').where('file', '=', file).limit(1).executeTakeFirst()
      if (!still) await rm(join(dir, file), { force: true })
    }
  }

  async function evict(): Promise<number> {
    await flush()
    const max = rt.config.proxy.recordingsMaxBytes
    const { total } = await db
      .selectFrom('recordings')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size'), eb.lit(0)).as('total'))
      .executeTakeFirstOrThrow()
    if (Number(total) <= max) return 0
    let excess = Number(total) - Math.floor(max * 0.9)
    let removed = 0
    while (excess > 0) {
      const oldest = await db.selectFrom('recordings').select(['key', 'size', 'file']).orderBy('last_access_at', 'asc').orderBy('key').limit(CHUNK).execute()
      if (oldest.length === 0) break
      const victims = []
      for (const row of oldest) {
        if (excess <= 0) break
        victims.push(row)
        excess -= Number(row.size)
      }
      await db.deleteFrom('recordings').where('key', 'in', victims.map((v) => v.key)).execute()
      await removeUnreferenced(victims.map((v) => v.file))
      removed += victims.length
    }
    return removed
  }

  async function sweepAbandoned(nowMs = Date.now()): Promise<number> {
    let removed = 0
    for (const name of await readdir(tmp).catch(() => [] as string[])) {
      const path = join(tmp, name)
      const info = await stat(path).catch(() => undefined)
      if (!info?.isFile() || nowMs - info.mtimeMs < ABANDONED_DOWNLOAD_MS) continue
      await rm(path, { force: true })
      removed++
    }
    if (removed > 0) rt.log.info({ files: removed }, 'removed abandoned recording downloads')
    return removed
  }

  return {
    async lookup(tenant, conversationId) {
      const row = await db.selectFrom('recordings').selectAll().where('key', '=', `${tenant}:${conversationId}`).executeTakeFirst()
      if (!row) return undefined
      try {
        const info = await stat(join(dir, row.file))
        if (info.size === Number(row.size)) return row
      } catch {
        // The file went missing (evicted by another replica, or removed by hand): download again.
      }
      await db.deleteFrom('recordings').where('key', '=', row.key).execute()
      return undefined
    },

    async store({ tenant, conversationId, headers: upstreamHeaders, body }) {
      const temp = join(tmp, `${process.pid}-${rt.random.hex(8)}`)
      const hash = createHash('sha256')
      let size = 0
      const limit = rt.config.proxy.recordingsMaxBytes
      try {
        await pipeline(
          Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>),
          new Transform({
            transform(chunk: Buffer, _enc, done) {
              size += chunk.length
              if (size > limit) return done(new Error(`recording larger than PROXY_RECORDINGS_MAX_BYTES (${limit})`))
              hash.update(chunk)
              done(null, chunk)
            },
          }),
          createWriteStream(temp),
        )
        const file = hash.digest('hex')
        await rename(temp, join(dir, file))
        const now = rt.clock.now()
        const row: RecordingRow = {
          key: `${tenant}:${conversationId}`,
          tenant,
          conversation_id: conversationId,
          file,
          content_type: upstreamHeaders.get('content-type') ?? 'application/octet-stream',
          headers: keptHeaders(upstreamHeaders),
          size,
          stored_at: now,
          last_access_at: now,
        }
        await db.insertInto('recordings').values(row).onConflict((oc) => oc.column('key').doUpdateSet({ ...row })).execute()
        await evict()
        return row
      } finally {
        await rm(temp, { force: true })
      }
    },

    respond(row, request, cache) {
      const size = Number(row.size)
      const headers = new Headers({
        'content-type': row.content_type,
        'accept-ranges': 'bytes',
        etag: `"${row.file.slice(0, 32)}"`,
        'x-cache': cache,
      })
      const range = parseRange(request.headers.get('range'), size)
      if (range === 'unsatisfiable') {
        headers.set('content-range', `bytes */${size}`)
        headers.set('content-type', 'application/json')
        const body = JSON.stringify({ error: { message: `requested range not satisfiable (size ${size} bytes)`, type: 'invalid_request' } })
        return new Response(request.method === 'HEAD' ? null : body, { status: 416, headers })
      }
      for (const [name, value] of Object.entries(row.headers ? (JSON.parse(row.headers) as Record<string, string>) : {})) headers.set(name, value)
      const { start, end } = range ?? { start: 0, end: size - 1 }
      const length = size === 0 ? 0 : end - start + 1
      headers.set('content-length', String(length))
      if (range) headers.set('content-range', `bytes ${start}-${end}/${size}`)
      const status = range ? 206 : 200
      if (request.method === 'HEAD' || length === 0) return new Response(null, { status, headers })
      const stream = Readable.toWeb(createReadStream(join(dir, row.file), { start, end })) as ReadableStream<Uint8Array>
      return new Response(stream, { status, headers })
    },

    touch(key) {
      accessTimes.touch(key)
    },
    evict,
    sweepAbandoned,
  }
}
