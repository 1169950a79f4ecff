import { createHash } from 'node:crypto'
import { accessSync, constants as fsConstants, createReadStream, mkdirSync } from 'node:fs'
import { open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { Selectable } from 'kysely'
import type { RecordingsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import type { CacheStatus } from './upstream.ts'
import { createAccessTimes } from './access-times.ts'
import { ConfigError } from '../config/load.ts'
import { accessProblem } from '../utils/access-problem.ts'
import { ifNoneMatchMatches } from './if-none-match.ts'
import { ageSeconds } from './age.ts'

export type RecordingRow = Selectable<RecordingsTable>

export interface RecordingCache {
  /** The cached recording of a tenant's conversation, if its file is still on disk. */
  lookup(tenant: string, conversationId: string): Promise<RecordingRow | undefined>
  /**
   * A 200, 206, 304 or 416 from the cached file for the request's method, If-None-Match, Range and If-Range; undefined when the file
   * went between the lookup and now (evicted by another request or replica): the caller downloads it again.
   */
  respond(row: RecordingRow, request: Request, cache: CacheStatus): Promise<Response | undefined>
  /**
   * A MISS: answers from the provider's 200 as its bytes arrive (the request's range of them) and writes them to a
   * temporary file on the way, kept under its content hash once the download ended whole. A recording larger than
   * PROXY_RECORDINGS_MAX_BYTES is passed through and not kept; a caller that goes away, or whose range ends, leaves
   * the download to finish for the cache. `done` is called once the download is over, whatever became of it.
   */
  passThrough(input: PassThroughInput): Promise<Response>
  touch(key: string): void
  evict(): Promise<number>
  /**
   * Removes downloads a process left behind in the temporary folder (killed mid-download: its `finally` never ran),
   * judged by the file's own modification time, and files no row refers to (another replica evicted their row: the
   * index is shared, the files are each replica's own); returns how many.
   */
  sweepAbandoned(nowMs?: number): Promise<number>
  /** Stops the downloads still going on for the cache (their callers have had their answers) and waits for them. */
  close(): Promise<void>
}

export interface PassThroughInput {
  tenant: string
  conversationId: string
  request: Request
  /** The provider's 200 (its headers). */
  upstream: Response
  /** Its body, as read (under the idle deadline). */
  body: ReadableStream<Uint8Array>
  /** Called once the download is over (kept, passed through, failed or stopped). */
  done?: () => void
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
/** How much of a recording waits for a slow caller before the download waits for it. */
const CALLER_BUFFER_BYTES = 256 * 1024

/** A 416 for a range past the recording's end, in the provider's error shape. */
function unsatisfiable(size: number, request: Request, headers: Headers): Response {
  headers.set('content-range', `bytes */${size}`)
  headers.set('content-type', 'application/json')
  const body = JSON.stringify({ error: { message: `requested range not satisfiable (size ${size} bytes)`, type: 'invalid_request' } })
  return new Response(request.method === 'HEAD' ? null : body, { status: 416, headers })
}

/**
 * What a 304 carries of the 200 it stands for (RFC 9110 §15.4.5): the fields a cache updates its copy with, and no
 * representation metadata (type, length, disposition) — there is no body to describe. Date is the server's own.
 */
const NOT_MODIFIED_HEADERS = ['etag', 'cache-control', 'content-location', 'expires', 'vary', 'age', 'x-cache'] as const

/**
 * A 304 when the request's If-None-Match matches the recording's ETag (RFC 9110 §13.1.2, weak comparison; `*` matches
 * any recording), whatever its Range: the condition is evaluated first (§13.2.2). Undefined when it does not.
 */
function notModified(request: Request, etag: string | undefined, headers: Headers): Response | undefined {
  if (!ifNoneMatchMatches(request.headers.get('if-none-match'), etag)) return undefined
  const kept = new Headers()
  for (const name of NOT_MODIFIED_HEADERS) {
    const value = headers.get(name)
    if (value !== null) kept.set(name, value)
  }
  return new Response(null, { status: 304, headers: kept })
}

/**
 * The range a request asks of a recording of `size` bytes. Only a GET has one (RFC 9110 §14.2: HEAD describes the
 * whole file), and only while its If-Range validator is this file's ETag (§13.1.5: a date or another ETag means the
 * caller's copy is another one, so it gets the whole file).
 */
function rangeOf(request: Request, size: number, etag: string | undefined): ByteRange | 'unsatisfiable' | undefined {
  if (request.method !== 'GET') return undefined
  const ifRange = request.headers.get('if-range')
  // Compared strongly (§13.1.5): a weak ETag never matches.
  if (ifRange !== null && (etag === undefined || etag.startsWith('W/') || ifRange.trim() !== etag)) return undefined
  return parseRange(request.headers.get('range'), size)
}

/**
 * The length of the file the body decodes to: a Content-Length of a body with a Content-Encoding (a provider or CDN that
 * compresses whatever it is asked) counts the compressed bytes fetch has already decoded, so it tells nothing.
 */
function contentLength(headers: Headers): number | undefined {
  const encoding = headers.get('content-encoding')
  if (encoding !== null && encoding.trim() !== '' && encoding.trim().toLowerCase() !== 'identity') return undefined
  const value = headers.get('content-length')
  return value !== null && /^\d{1,15}$/.test(value.trim()) ? Number(value) : undefined
}

/**
 * The provider's headers that describe the file rather than the moment: kept with it and replayed on every
 * answer (HIT, STALE, Range), so a browser still saves `<id>.wav` and caches it as the provider allows. Its ETag too:
 * the same bytes carry the same validator whether they came from the provider (a MISS, a query's BYPASS) or the disk,
 * or a client's If-Range and If-None-Match would fail on one path what they matched on another.
 */
export const RECORDING_HEADERS = ['content-disposition', 'cache-control', 'etag'] as const

function recordingHeaders(from: Headers): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const name of RECORDING_HEADERS) {
    const value = from.get(name)
    if (value !== null) kept[name] = value
  }
  return kept
}

/** The same, as the `recordings` row keeps them (null when there are none). */
function storedHeaders(from: Headers): string | null {
  const kept = recordingHeaders(from)
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
  // Calls' audio: the user's alone, as the data folder is (src/utils/private-dir.ts; the checkout's own data/ is 0755).
  // Made at start: a folder another user made is one line naming it, a refusal to start (exit 2), not a bare EACCES.
  try {
    mkdirSync(tmp, { recursive: true, mode: 0o700 })
    // There already but not this user's to write in: a download would fail on the first recording instead.
    for (const folder of [dir, tmp]) accessSync(folder, fsConstants.R_OK | fsConstants.W_OK | fsConstants.X_OK)
  } catch (error) {
    const problem = accessProblem(error)
    throw problem ? new ConfigError('DATA_DIR', `recordings folder: ${problem}`) : error
  }
  const accessTimes = createAccessTimes(rt, 'recordings')

  const flush = () => accessTimes.flush()

  async function removeUnreferenced(files: string[]): Promise<void> {
    for (const file of new Set(files)) {
      const still = await db.selectFrom('recordings').select('key').where('file', '=', file).limit(1).executeTakeFirst()
      if (!still) await rm(join(dir, file), { force: true })
    }
  }

  /** Trims the index to 90 % of the budget, least recently used first; `keep` (a row just stored) is never a victim. */
  async function evict(keep?: string): Promise<number> {
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
      let query = db.selectFrom('recordings').select(['key', 'size', 'file']).orderBy('last_access_at', 'asc').orderBy('key').limit(CHUNK)
      if (keep !== undefined) query = query.where('key', '!=', keep)
      const oldest = await query.execute()
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
    // Files of this replica whose row went: evicted by another replica (which removed only its own copy). A file
    // written moments ago may not have its row yet, hence the same grace.
    const files = (await readdir(dir, { withFileTypes: true }).catch(() => [])).filter((e) => e.isFile()).map((e) => e.name)
    for (let i = 0; i < files.length; i += CHUNK) {
      const names = files.slice(i, i + CHUNK)
      const referenced = new Set((await db.selectFrom('recordings').select('file').where('file', 'in', names).execute()).map((r) => r.file))
      for (const name of names) {
        if (referenced.has(name)) continue
        const info = await stat(join(dir, name)).catch(() => undefined)
        if (!info || nowMs - info.mtimeMs < ABANDONED_DOWNLOAD_MS) continue
        await rm(join(dir, name), { force: true })
        removed++
      }
    }
    if (removed > 0) rt.log.info({ files: removed }, 'removed abandoned recording downloads and files no longer indexed')
    return removed
  }

  /** Downloads still going on for the cache after their callers' answers, stopped by close(). */
  const downloads = new Set<{ stop: () => void; over: Promise<void> }>()

  /** Writes a finished download's file and row (the file is kept only if the download ended whole). */
  async function keep(input: PassThroughInput, temp: string, file: string, size: number): Promise<void> {
    await rename(temp, join(dir, file))
    const now = rt.clock.now()
    const row: RecordingRow = {
      key: `${input.tenant}:${input.conversationId}`,
      tenant: input.tenant,
      conversation_id: input.conversationId,
      file,
      content_type: input.upstream.headers.get('content-type') ?? 'application/octet-stream',
      headers: storedHeaders(input.upstream.headers),
      size,
      stored_at: now,
      last_access_at: now,
    }
    await db.insertInto('recordings').values(row).onConflict((oc) => oc.column('key').doUpdateSet({ ...row })).execute()
    await evict(row.key)
  }

  async function passThrough(input: PassThroughInput): Promise<Response> {
    const { request, upstream } = input
    const total = contentLength(upstream.headers)
    const headers = new Headers({
      'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream',
      'accept-ranges': 'bytes',
      'x-cache': 'MISS',
      ...recordingHeaders(upstream.headers),
    })
    // The caller's copy is this one: a 304 once the recording is kept (no body for the caller: the download is waited for).
    const unchanged = notModified(request, upstream.headers.get('etag') ?? undefined, headers)
    // With no length from the provider a range cannot be placed (nor a suffix counted): the whole file, as RFC 9110
    // lets a server answer any Range.
    const range = unchanged || total === undefined ? undefined : rangeOf(request, total, upstream.headers.get('etag') ?? undefined)
    const { start, end } = range === undefined || range === 'unsatisfiable' ? { start: 0, end: total === undefined ? Infinity : total - 1 } : range
    // The caller's bytes run to the file's end (its last ones then wait for the file to be kept, below).
    const toTheEnd = total !== undefined && end === total - 1
    let response: Response
    let caller: ReadableStreamDefaultController<Uint8Array> | undefined
    let callerOpen = false
    let demand: (() => void) | undefined
    const wake = () => {
      demand?.()
      demand = undefined
    }
    if (unchanged) response = unchanged
    else if (range === 'unsatisfiable') response = unsatisfiable(total!, request, headers)
    else {
      if (total !== undefined) headers.set('content-length', String(total === 0 ? 0 : end - start + 1))
      if (range) headers.set('content-range', `bytes ${start}-${end}/${total}`)
      const status = range ? 206 : 200
      if (request.method === 'HEAD' || total === 0) response = new Response(null, { status, headers })
      else {
        callerOpen = true
        const stream = new ReadableStream<Uint8Array>(
          {
            start: (controller) => void (caller = controller),
            pull: wake,
            cancel: () => {
              callerOpen = false
              wake()
            },
          },
          new ByteLengthQueuingStrategy({ highWaterMark: CALLER_BUFFER_BYTES }),
        )
        response = new Response(stream, { status, headers })
      }
    }

    const temp = join(tmp, `${process.pid}-${rt.random.hex(8)}`)
    const limit = rt.config.proxy.recordingsMaxBytes
    const reader = input.body.getReader()
    let stopped = false
    // A cache that cannot be written to (a full disk, a permission) costs the cache, not the answer.
    let handle: FileHandle | undefined = await open(temp, 'w', 0o600).catch((error: unknown) => {
      rt.log.warn({ err: error, conversation_id: input.conversationId }, 'cannot write the recording cache; passing the recording through')
      return undefined
    })
    const hash = createHash('sha256')
    const download = {
      stop: () => {
        stopped = true
        wake()
        void reader.cancel().catch(() => {})
      },
      over: Promise.resolve(),
    }
    const run = async () => {
      let size = 0
      let held: Uint8Array | undefined
      try {
        for (;;) {
          if (handle === undefined && !callerOpen) {
            await reader.cancel()
            return
          }
          const { done, value } = await reader.read()
          if (stopped) throw new Error('the service is stopping')
          if (done) break
          if (callerOpen && caller) {
            const from = Math.max(start - size, 0)
            const to = Math.min(end + 1 - size, value.length)
            const last = size + value.length > end
            // A range that ends before the file does is answered now (the rest goes on for the cache). The last
            // bytes of one that runs to the end wait until the file is kept (below), so that a caller who has them
            // all — it knows from Content-Length, before the stream closes — finds the recording cached next time.
            if (last && toTheEnd) held = value.subarray(from, to)
            else if (to > from) caller.enqueue(value.subarray(from, to))
            if (last && !toTheEnd) {
              caller.close()
              callerOpen = false
            }
          }
          size += value.length
          if (handle !== undefined) {
            if (size > limit) {
              await handle.close()
              handle = undefined
              await rm(temp, { force: true })
              rt.log.info({ conversation_id: input.conversationId, limit }, 'recording larger than PROXY_RECORDINGS_MAX_BYTES: passed through, not cached')
            } else {
              hash.update(value)
              await handle.write(value)
            }
          }
          if (callerOpen && caller && (caller.desiredSize ?? 1) <= 0) await new Promise<void>((resolve) => (demand = resolve))
        }
        if (total !== undefined && size !== total) throw new Error(`the provider sent ${size} of the ${total} bytes it announced`)
        if (handle !== undefined) {
          await handle.close()
          handle = undefined
          // The caller has every byte: a file that cannot be kept costs a later download, not this answer.
          await keep(input, temp, hash.digest('hex'), size).catch((error: unknown) => rt.log.warn({ err: error, conversation_id: input.conversationId }, 'could not keep a downloaded recording'))
        }
        if (callerOpen && caller) {
          if (held?.length) caller.enqueue(held)
          caller.close()
          callerOpen = false
        }
      } catch (error) {
        // Nothing of it is kept, and that is so before the caller hears of the failure.
        await handle?.close().catch(() => {})
        handle = undefined
        await rm(temp, { force: true })
        if (callerOpen && caller) caller.error(error)
        callerOpen = false
        rt.log.warn({ err: error, conversation_id: input.conversationId }, 'recording download failed')
      } finally {
        await handle?.close().catch(() => {})
        await rm(temp, { force: true })
        downloads.delete(download)
        input.done?.()
      }
    }
    download.over = run()
    downloads.add(download)
    // An answer with no body for the caller (HEAD, a 304, a 416, an empty file) waits for the download: the recording is
    // then cached for the request that follows, as the answer's headers imply.
    if (!callerOpen) await download.over
    return response
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

    passThrough,

    async respond(row, request, cache) {
      const size = Number(row.size)
      // The provider's kept headers (Content-Disposition, Cache-Control, ETag) on every answer, a 416 too, as on a MISS.
      const kept = row.headers ? (JSON.parse(row.headers) as Record<string, string>) : {}
      // The provider's ETag, as its own answers carry it; when it sent none (or the row predates keeping it), the bytes' hash.
      const etag = kept.etag ?? `"${row.file.slice(0, 32)}"`
      // Served from disk: its Age, as a JSON entry's (a downstream cache took a recording kept for days as new).
      const age = String(ageSeconds(row, rt.clock.now()))
      const headers = new Headers({ 'content-type': row.content_type, 'accept-ranges': 'bytes', ...kept, etag, age, 'x-cache': cache })
      const unchanged = notModified(request, etag, headers)
      if (unchanged) return unchanged
      const range = rangeOf(request, size, etag)
      if (range === 'unsatisfiable') return unsatisfiable(size, request, headers)
      const { start, end } = range ?? { start: 0, end: size - 1 }
      const length = size === 0 ? 0 : end - start + 1
      headers.set('content-length', String(length))
      if (range) headers.set('content-range', `bytes ${start}-${end}/${size}`)
      const status = range ? 206 : 200
      // Opened before answering: a file evicted from now on stays readable through this handle.
      let handle: FileHandle
      try {
        handle = await open(join(dir, row.file), 'r')
      } catch {
        return undefined
      }
      if (request.method === 'HEAD' || length === 0) {
        await handle.close()
        return new Response(null, { status, headers })
      }
      // The stream closes the handle at its end, on an error, or when the caller goes away (cancel destroys it).
      const stream = Readable.toWeb(createReadStream('', { fd: handle, start, end })) as ReadableStream<Uint8Array>
      return new Response(stream, { status, headers })
    },

    touch(key) {
      accessTimes.touch(key)
    },
    evict: () => evict(),
    sweepAbandoned,
    async close() {
      const over = [...downloads].map((d) => {
        d.stop()
        return d.over
      })
      await Promise.all(over)
    },
  }
}
