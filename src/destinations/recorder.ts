import type { Runtime } from '../runtime.ts'
import { recordAttempts, renewClaims, type AttemptRecord } from './outbox.ts'
import { classifyStorageError } from '../webhooks/storage-errors.ts'
import { isMomentaryError } from '../db/momentary-error.ts'
import { writeAgain } from '../utils/write-again.ts'

/**
 * Group commit of attempt outcomes, shared by every destination lane of a worker: outcomes that land
 * while a commit runs go into the next one, so the commit rate (one fsync each on SQLite) stays flat as
 * deliveries per second grow.
 */
export interface AttemptRecorder {
  push(record: AttemptRecord): void
  busy(): boolean
  /** Resolves when everything pushed so far is committed (or given up on). */
  settle(): Promise<void>
  /** The service stopping: outcomes being written again give up at once (their claims lapse; they are sent again). */
  stop(): void
}

/**
 * How long outcomes gather before their commit. better-sqlite3 commits synchronously, so no answer lands while
 * a commit runs: committing at the next turn of the event loop carried ~30 outcomes at full speed, and every
 * commit rewrites the same index and table pages into the log. A few milliseconds make it a few hundred: at 5 ms
 * a drain of 17,000–20,000 deliveries a second committed ~85 at a time, at 20 ms up to GATHER_MAX — five
 * alternated pairs of `npm run bench -- forwarding`, 16,472–19,189 deliveries/s against 17,823–20,399. The cost:
 * with ordering on, a conversation's next delivery waits up to this long for the previous outcome (≤ 50 a second
 * per conversation), and a crash re-sends up to this long's worth of answered deliveries (at least once).
 */
const GATHER_MS = 20
/** A commit starts at once when this many outcomes wait. */
const GATHER_MAX = 256
/**
 * Outcomes the database could not take for a moment (a dropped connection, a failover) are written again this often,
 * this many tries in all: well within their claims, which each try renews to at least CLAIM_HOLD_MS from then — past
 * the next try, and a try that waits for a connection (PG_CONNECT_TIMEOUT_MS).
 */
const RETRY_MS = 1_000
const TRIES = 5
const CLAIM_HOLD_MS = 10_000

/** Renews the claims of outcomes about to be written again; returns those still this worker's (`claimKeeper`). */
type ClaimKeeper = (held: AttemptRecord[]) => Promise<AttemptRecord[]>

export function createAttemptRecorder(rt: Runtime, owner: string, onCommitted: () => void): AttemptRecorder {
  const pending: AttemptRecord[] = []
  let flushing: Promise<void> | undefined
  let gathered: (() => void) | undefined

  function gather(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, GATHER_MS)
      gathered = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  /** Ends the waits of outcomes being written again when the worker stops (they give up at once). */
  const stopping = new AbortController()
  /** How an outcome the database could not take for a moment is written again (src/utils/write-again.ts). */
  const again = { tries: TRIES, everyMs: RETRY_MS, retryable: isMomentaryError, signal: stopping.signal }

  /**
   * Renews, before a write is tried again, the claims of the outcomes it holds, and returns the outcomes whose claims
   * are still this worker's. It knows each claim by the end it was claimed or last renewed to — a renewal finds the
   * claim by it — so one keeper serves a commit and the row-by-row writes after it.
   */
  function claimKeeper(): ClaimKeeper {
    // By outcome, not by delivery: a delivery whose earlier outcome was given up (refused, its claim left to lapse) is
    // claimed and sent again, and its new outcome joins the same writes under a claim of its own.
    const claimEnds = new Map<AttemptRecord, number>()
    const claimEnd = (r: AttemptRecord) => claimEnds.get(r) ?? r.row.claimed_until ?? 0
    return async (held) => {
      const renewed = await renewClaims(rt, owner, held.map((r) => ({ id: r.row.id, claimedUntil: claimEnd(r) })), rt.clock.now() + CLAIM_HOLD_MS)
      const gone = held.filter((r) => !renewed.has(r.row.id))
      if (gone.length > 0) {
        // Not renewed: recorded after all (a commit whose answer the dropped connection lost), or lapsed and
        // claimed since — by another replica, or here — whose holder records its own outcome.
        rt.log.warn(
          { deliveries: gone.length, delivery_ids: gone.slice(0, 20).map((r) => r.row.id) },
          'delivery outcomes not written again: their claims are no longer this worker\'s (recorded after all, or lapsed and claimed again)',
        )
      }
      const kept = held.filter((r) => renewed.has(r.row.id))
      for (const r of kept) claimEnds.set(r, renewed.get(r.row.id)!)
      return kept
    }
  }

  /**
   * Commits a batch. An outcome not committed is lost (its claim lapses and the delivery goes out again, at least
   * once), and every destination's outcomes share the commit. So a commit the database could not take for a moment is
   * written again (src/utils/write-again.ts) every RETRY_MS, TRIES in all, with the outcomes that landed meanwhile,
   * their claims renewed before each try — a claim no longer this process's is left out. A commit with a row the
   * database refused (a sink's answer it cannot store) is written row by row (`rowByRow`), each row written again alike.
   */
  async function commit(batch: AttemptRecord[]): Promise<void> {
    let held = batch
    const stillHeld = claimKeeper()
    let wroteAgain = false
    let error: unknown
    try {
      await writeAgain(rt.clock, () => recordAttempts(rt, owner, held), {
        ...again,
        onFirstFailure: (failed) => {
          wroteAgain = true
          rt.log.warn({ deliveries: held.length, err: (failed as Error).message }, 'could not record delivery outcomes; trying again while their claims hold')
        },
        async stillOurs() {
          // What landed meanwhile goes with this try: it would fail alike on its own, its claim running out meanwhile.
          held = await stillHeld(held.concat(pending.splice(0)))
          return held.length > 0
        },
      })
      if (wroteAgain) rt.log.info({ deliveries: held.length }, 'recorded the delivery outcomes once the database took them')
      return
    } catch (failed) {
      error = failed
    }
    if (held.length === 0) return
    if (classifyStorageError(error) !== 'refused') {
      // The database is away (or full), or the statement failed for all: row by row would only fail slower.
      rt.log.error({ deliveries: held.length, err: (error as Error).message }, 'could not record delivery outcomes')
      return
    }
    if (held.length === 1) return unrecorded(held[0]!, error)
    await rowByRow(held, stillHeld)
  }

  /**
   * Writes a refused commit's outcomes one by one, so the row the database refuses cannot take the others with it.
   * Each is written again while the database cannot take it for a moment, as the commit was — its claim renewed by the
   * commit's keeper, which knows the ends the commit's tries renewed it to — or a blip here would let it and every row
   * after it lapse, and be delivered a second time. A momentary error is tried again before it is judged, and is never
   * judged refused (a lock timeout, 55P03, is contended): a row out of tries means the database is away for the rest too.
   */
  async function rowByRow(held: AttemptRecord[], stillHeld: ClaimKeeper): Promise<void> {
    let waiting = [...held]
    while (waiting.length > 0) {
      const record = waiting.shift()!
      let row = [record]
      let wroteAgain = false
      try {
        await writeAgain(rt.clock, () => recordAttempts(rt, owner, row), {
          ...again,
          onFirstFailure: (failed) => {
            wroteAgain = true
            rt.log.warn(
              { delivery_id: record.row.id, event_id: record.row.event_id, err: (failed as Error).message },
              'could not record a delivery outcome; trying again while its claim holds',
            )
          },
          async stillOurs() {
            // The rows after it wait meanwhile, and so do the outcomes that landed since (they join this pass, as they
            // join a commit's next try): their claims are renewed with its, or a few rows written again in turn would
            // outlast them, and they would be delivered a second time although their outcomes were in hand.
            waiting = waiting.concat(pending.splice(0))
            const kept = new Set(await stillHeld([...row, ...waiting]))
            waiting = waiting.filter((r) => kept.has(r))
            row = row.filter((r) => kept.has(r))
            return row.length > 0
          },
        })
        if (wroteAgain) rt.log.info({ delivery_id: record.row.id }, 'recorded the delivery outcome once the database took it')
      } catch (failed) {
        // No longer this worker's (logged by the keeper): the database answered, so the next row is written.
        if (row.length === 0) continue
        unrecorded(record, failed)
        if (classifyStorageError(failed) === 'refused') continue
        // The database went away meanwhile, past the tries (or the worker is stopping): the rest lapse too.
        if (waiting.length > 0) rt.log.error({ deliveries: waiting.length, err: (failed as Error).message }, 'could not record delivery outcomes')
        return
      }
    }
  }

  function unrecorded(record: AttemptRecord, error: unknown): void {
    const row = record.row
    rt.log.error(
      { delivery_id: row.id, event_id: row.event_id, attempt: row.attempts + 1, result: record.result, err: (error as Error).message },
      'could not record a delivery outcome; its claim lapses and it is sent again',
    )
  }

  function flush(): void {
    if (flushing) return
    flushing = (async () => {
      // Let the answers on the wire land first (GATHER_MS), unless enough are already waiting.
      if (pending.length < GATHER_MAX) await gather()
      gathered = undefined
      while (pending.length > 0) {
        await commit(pending.splice(0))
      }
    })().finally(() => {
      flushing = undefined
      // Recorded outcomes free claims and unblock the next delivery of an ordered conversation.
      onCommitted()
      // An outcome pushed after the loop's last look but before this ran found a flush still going and left it to
      // this one: it goes now rather than wait for the next outcome (perhaps none, and its claim would lapse).
      if (pending.length > 0) flush()
    })
  }

  return {
    push(record) {
      pending.push(record)
      if (pending.length >= GATHER_MAX) gathered?.()
      flush()
    },
    busy: () => pending.length > 0 || Boolean(flushing),
    async settle() {
      for (let i = 0; i < 100 && (flushing || pending.length); i++) {
        if (!flushing) flush()
        await flushing
      }
    },
    stop: () => stopping.abort(),
  }
}
