import { spawn, type ChildProcess } from 'node:child_process'
import { afterEach, expect, it } from 'vitest'
import { reapDeadInstances, registerInstance, releaseInstance, startInstanceRegistry } from '../../src/instances.ts'
import { realRunInProgress } from '../../src/recipes/overlap.ts'
import { isProcessAlive, processIdentity } from '../../src/utils/process-identity.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

/**
 * A killed instance's claims are given back as soon as another instance on the machine looks (at its start, and
 * every REAP_MS), instead of lapsing 17–25 s later; a live one's never are. Real processes: the identity is the
 * kernel's (boot, pid namespace, pid, start time).
 */

const children: ChildProcess[] = []

async function idleProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
  children.push(child)
  await new Promise((resolve) => child.once('spawn', resolve))
  return child
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

afterEach(async () => {
  for (const c of children.splice(0)) await kill(c)
})

it('names a process exactly: alive while it runs, dead once killed, undecided for another machine or garbage', async () => {
  const own = processIdentity()
  expect(own).toMatch(/^[0-9a-f-]{36}\/pid:\[\d+\]\/\d+\/\d+$/)
  expect(isProcessAlive(own!)).toBe(true)
  const child = await idleProcess()
  const identity = processIdentity(child.pid)!
  expect(isProcessAlive(identity)).toBe(true)
  await kill(child)
  expect(isProcessAlive(identity)).toBe(false)
  // The same pid with another start time is another process (a reused pid).
  const [boot, namespace, pid] = own!.split('/')
  expect(isProcessAlive(`${boot}/${namespace}/${pid}/1`)).toBe(false)
  expect(isProcessAlive(`00000000-0000-0000-0000-000000000000/${namespace}/${pid}/1`)).toBeUndefined()
  expect(isProcessAlive(`${boot}/pid:[1]/${pid}/1`)).toBeUndefined()
  expect(isProcessAlive('garbage')).toBeUndefined()
})

describeEachDialect('killed instances', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  /** Rows in every claim table, and a lease, held by `id`. */
  async function claimEverything(id: string, tag: string): Promise<void> {
    const db = h!.rt.store.db
    const now = h!.clock.now()
    const owner = `${id}:worker`
    const event = makeEvent({ event_id: `evt_${tag}` })
    expect((await h!.send(event)).status).toBe(204)
    await db.updateTable('webhook_events').set({ claimed_by: owner, claimed_until: now + 60_000 }).where('event_id', '=', event.event_id).execute()
    await db.insertInto('recipe_event_fires').values({ recipe: 'r', event_id: event.event_id, fired_at: now, status: 'pending', claimed_by: owner, claimed_until: now + 60_000, run_id: null, last_error: null }).execute()
    await db.insertInto('call_queue').values({ id: `call_${tag}`, tenant: 't', request: '{}', attempts: 1, next_attempt_at: now, claimed_by: owner, claimed_until: now + 60_000, enqueued_at: now, last_error: null }).execute()
    await db
      .insertInto('mail_log')
      .values({ id: `mail_${tag}`, message_id: null, recipients: 'a@example.com', subject: 's', status: 'queued', attempts: 0, error: null, created_at: now, updated_at: now, raw: 'x', next_attempt_at: now, claimed_by: owner, claimed_until: now + 60_000 })
      .execute()
    await db
      .insertInto('destination_deliveries')
      .values({
        id: `msg_${tag}`, destination: 'crm', event_id: event.event_id, event_type: event.event_type, conversation_id: null, payload: '', order_at: now, ordered: 0, status: 'pending',
        attempts: 0, round_attempts: 0, next_attempt_at: now, claimed_by: owner, claimed_until: now + 60_000, last_status: null, last_error: null, created_at: now, delivered_at: null,
      })
      .execute()
    await db.insertInto('leases').values({ name: `lease_${tag}`, owner: id, expires_at: now + 60_000 }).execute()
    // Its breaker's pause of a destination: it stopped with it (the pages showed it paused while another delivered).
    await db.insertInto('kv_state').values({ namespace: 'switchboard:destination-pauses', key: `crm\n${id}`, value: JSON.stringify({ until: now + 600_000, reason: 'r' }), updated_at: now }).execute()
  }

  async function heldBy(id: string): Promise<number> {
    const db = h!.rt.store.db
    let n = 0
    for (const table of ['webhook_events', 'recipe_event_fires', 'call_queue', 'mail_log', 'destination_deliveries'] as const) {
      const rows = await db.selectFrom(table).select('claimed_by').where('claimed_by', 'like', `${id}:%`).execute()
      n += rows.length
    }
    const pauses = await db.selectFrom('kv_state').select('key').where('namespace', '=', 'switchboard:destination-pauses').where('key', '=', `crm\n${id}`).execute()
    return n + (await db.selectFrom('leases').select('owner').where('owner', '=', id).execute()).length + pauses.length
  }

  it("gives back every claim and lease of a killed instance, and never a live one's", async () => {
    h = await createHarness(dialect)
    const db = h.rt.store.db
    const dead = await idleProcess()
    const alive = await idleProcess()
    await db.insertInto('instances').values([
      { id: '9001-dead', process: processIdentity(dead.pid)!, host: 'here', started_at: 0 },
      { id: '9002-live', process: processIdentity(alive.pid)!, host: 'here', started_at: 0 },
      // Another machine's instance (another boot): never judged from here.
      { id: '9003-away', process: '00000000-0000-0000-0000-000000000000/pid:[1]/42/7', host: 'elsewhere', started_at: 0 },
    ]).execute()
    // A claim of another instance whose id merely starts the same way is not its claim.
    await claimEverything('9001-dead', 'a')
    await claimEverything('9001-dead-not', 'b')
    await claimEverything('9002-live', 'c')
    await claimEverything('9003-away', 'd')

    expect(await reapDeadInstances(h.rt)).toEqual([])
    await kill(dead)
    expect(await reapDeadInstances(h.rt)).toEqual(['9001-dead'])
    expect(await heldBy('9001-dead')).toBe(0)
    expect(await heldBy('9001-dead-not')).toBe(7)
    expect(await heldBy('9002-live')).toBe(7)
    expect(await heldBy('9003-away')).toBe(7)
    expect((await db.selectFrom('instances').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['9002-live', '9003-away'])
    // Released rows are claimable at once: no claim, no lapse to wait for.
    expect(await db.selectFrom('call_queue').select(['claimed_by', 'claimed_until']).where('id', '=', 'call_a').executeTakeFirst()).toEqual({ claimed_by: null, claimed_until: null })
    expect(await reapDeadInstances(h.rt)).toEqual([])
  })

  // A recipe that ends its thread (process.exit, out of memory, a loop the watchdog stops) had its events given back
  // untouched, run again after every restart: a crash loop no attempt limit ended.
  it('the recipe events a stopped instance was running count that run as an attempt: failed, due again later, and dead at the limit', async () => {
    h = await createHarness(dialect, { PROCESSING_MAX_ATTEMPTS: '3' })
    const db = h.rt.store.db
    const now = h.clock.now()
    const owner = `${process.pid}-gone:worker`
    await db.insertInto('recipe_event_fires').values([
      { recipe: 'r', event_id: 'evt_first', fired_at: now, status: 'pending', attempts: 0, claimed_by: owner, claimed_until: now + 60_000, run_id: null, last_error: null },
      { recipe: 'r', event_id: 'evt_last', fired_at: now, status: 'failed', attempts: 2, claimed_by: owner, claimed_until: now + 60_000, run_id: null, last_error: 'x' },
      { recipe: 'r', event_id: 'evt_others', fired_at: now, status: 'pending', attempts: 0, claimed_by: 'someone-else:worker', claimed_until: now + 60_000, run_id: null, last_error: null },
    ]).execute()
    await releaseInstance(h.rt, `${process.pid}-gone`)
    const rows = await db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'claimed_by', 'next_attempt_at', 'last_error']).orderBy('event_id').execute()
    expect(rows.map((r) => ({ ...r, attempts: Number(r.attempts), next_attempt_at: Number(r.next_attempt_at) }))).toEqual([
      { event_id: 'evt_first', status: 'failed', attempts: 1, claimed_by: null, next_attempt_at: now + 30_000, last_error: expect.stringMatching(/^interrupted: its processing thread or process stopped during the run/) },
      { event_id: 'evt_last', status: 'dead', attempts: 3, claimed_by: null, next_attempt_at: now + 30_000, last_error: expect.stringMatching(/^interrupted/) },
      { event_id: 'evt_others', status: 'pending', attempts: 0, claimed_by: 'someone-else:worker', next_attempt_at: expect.any(Number), last_error: null },
    ])
  })

  it('a processing thread that died while its process lives: its recipe runs still marked running are closed, so the recipes run again at once', async () => {
    h = await createHarness(dialect)
    const db = h.rt.store.db
    const own = processIdentity()!
    const now = h.clock.now()
    // Two processing threads of this very process (serve restarts a dead one): the first died mid-run.
    await db.insertInto('instances').values([
      { id: `${process.pid}-dead`, process: own, host: 'here', started_at: 0 },
      { id: `${process.pid}-live`, process: own, host: 'here', started_at: 0 },
    ]).execute()
    const run = (id: string, recipe: string, owner: string) =>
      db.insertInto('recipe_runs').values({ id, recipe, trigger: 'manual', event_id: null, dry_run: 0, status: 'running', started_at: now - 60_000, ended_at: null, summary: null, plan: null, error: null, process: `${own}/${owner}` }).execute()
    await run('run-crashy', 'crashy', `${process.pid}-dead`)
    await run('run-other', 'other', `${process.pid}-live`)
    // The process lives, so by itself the run reads as in progress (for an hour, before this).
    expect(await realRunInProgress(h.rt, 'crashy')).toMatchObject({ id: 'run-crashy' })

    await releaseInstance(h.rt, `${process.pid}-dead`)
    expect(await realRunInProgress(h.rt, 'crashy')).toBeUndefined()
    expect(await db.selectFrom('recipe_runs').select(['status', 'error']).where('id', '=', 'run-crashy').executeTakeFirstOrThrow()).toEqual({
      status: 'failed',
      error: 'interrupted: its process or processing thread stopped during the run',
    })
    // The live thread's run is its own business.
    expect(await realRunInProgress(h.rt, 'other')).toMatchObject({ id: 'run-other' })
    // Counted as any run that failed: /metrics had no series for the run a recipe lost its thread in.
    const metrics = await h.rt.metrics.metrics()
    expect(metrics).toContain('switchboard_recipe_runs_total{recipe="crashy",trigger="manual",outcome="failed"} 1')
    expect(metrics).toContain('switchboard_recipe_run_seconds_count{recipe="crashy",outcome="failed"} 1')
    expect(metrics).toContain('switchboard_recipe_run_seconds_sum{recipe="crashy",outcome="failed"} 60')
    expect(metrics).not.toContain('recipe="other"')
  })

  it('registers on start, reaps a predecessor on start, and leaves on a clean stop', async () => {
    h = await createHarness(dialect)
    const db = h.rt.store.db
    const dead = await idleProcess()
    await db.insertInto('instances').values({ id: '9101-before', process: processIdentity(dead.pid)!, host: 'here', started_at: 0 }).execute()
    await claimEverything('9101-before', 'e')
    await kill(dead)
    const stop = await startInstanceRegistry(h.rt)
    expect(await heldBy('9101-before')).toBe(0)
    expect((await db.selectFrom('instances').select('id').execute()).map((r) => r.id)).toEqual([h.rt.instanceId])
    await stop()
    expect(await db.selectFrom('instances').select('id').execute()).toEqual([])
    // Registering twice (a restart that kept its id) updates the row.
    expect(await registerInstance(h.rt)).toBe(true)
    expect(await registerInstance(h.rt)).toBe(true)
    expect(await db.selectFrom('instances').select('id').execute()).toHaveLength(1)
  })
})
