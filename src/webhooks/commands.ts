import { CliError, defineCommand, intFlag, JSON_OPTION, limitOption, type CliCommand } from '../cli-kit.ts'
import { sleep } from '../utils/clock.ts'
import { isVoiceApiError } from '../upstream/errors.ts'
import { shownUrl } from '../utils/shown-url.ts'
import { printable } from '../utils/printable.ts'
import { waitForStopSignal } from '../utils/stop-signal.ts'
import { terminalJson, terminalJsonText } from '../utils/terminal-json.ts'
import { snakeCaseKeys } from '../utils/snake-case.ts'
import { EVENT_STATUSES, getEvent, listEvents, shownBody } from './events.ts'
import { EventBusyError, requeueEvent } from './processing.ts'
import { reconcile } from './reconcile.ts'
import { firesForEvent } from '../recipes/claims.ts'

const eventsList = defineCommand({
  name: 'events list',
  readsStoredData: true,
  usage: '[--type T] [--status S] [--limit N] [--json]',
  summary: 'stored webhook events, newest first (status: pending, processed, failed, dead)',
  options: {
    type: { type: 'string', value: 'T', help: 'only events of this type, e.g. call.no_answer' },
    status: { type: 'string', value: 'S', help: `only events in this state: ${EVENT_STATUSES.join(', ')}` },
    limit: limitOption(10_000),
    json: JSON_OPTION,
  },
  examples: ['events list --status dead', 'events list --type call.no_answer --limit 10 --json'],
  async run(ctx) {
    const status = ctx.values.status as string | undefined
    if (status !== undefined && !(EVENT_STATUSES as readonly string[]).includes(status)) {
      throw new CliError(`--status must be one of ${EVENT_STATUSES.join(', ')} (got "${status}")`)
    }
    const limit = intFlag(ctx.values, 'limit', 50)!
    if (limit < 1 || limit > 10_000) throw new CliError('--limit must be from 1 to 10000')
    const rt = await ctx.runtime()
    const events = await listEvents(rt, { type: ctx.values.type as string | undefined, status, limit })
    if (ctx.values.json) return ctx.json(events)
    ctx.table(
      events.map((e) => ({ ...e, error: e.last_error })),
      // The target tells a CRM's `created` from a GitHub's: the type alone does not.
      ['event_id', 'target', 'event_type', 'status', 'attempts', 'duplicates', 'source', 'customer_phone', 'conversation_id', 'received_at', 'error'],
    )
    // Nothing at all: most often the service keeps its events in another database than the one this command opened.
    if (events.length === 0 && ctx.values.type === undefined && status === undefined) {
      ctx.write(`no events stored in ${shownUrl(rt.config.databaseUrl)}; if the service runs with another DATA_DIR or DATABASE_URL, give this command the same\n`)
    }
  },
})

const eventsShow = defineCommand({
  name: 'events show',
  readsStoredData: true,
  usage: '<id> [--json]',
  summary: 'one stored webhook event with its body, audit headers and what each recipe made of it',
  args: [['<id>', 'the event\'s id (event_id), as events list shows it']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const id = ctx.positionals[0]
    if (!id) throw new CliError('give the event id: events show <id>')
    const rt = await ctx.runtime()
    const event = await getEvent(rt, id)
    if (!event) throw new CliError(`no webhook event with id "${id}" (see: events list)`)
    // What each recipe subscribed to it made of it: ran (which run), waiting for a retry, or gave up (dead).
    const recipes = (await firesForEvent(rt, id)).map((f) => ({ recipe: f.recipe, status: f.status, attempts: f.attempts, run_id: f.runId, error: f.error }))
    if (ctx.values.json) return ctx.json({ ...event, recipes })
    const { body, raw_body, headers, ...fields } = event
    // Ids, type and error come from a webhook or what processing made of it: one line each, nothing that steers the terminal.
    for (const [key, value] of Object.entries(fields)) ctx.write(`${key.padEnd(16)} ${printable(String(value ?? ''), Infinity)}\n`)
    for (const r of recipes) {
      // A recipe's error may quote what it read (a webhook's field, an answer): one line, nothing that steers the terminal.
      const error = printable(r.error ?? '', 300)
      const how = r.status === 'done' ? `ran${r.run_id ? ` (run ${r.run_id})` : ''}` : r.status === 'dead' ? `gave up after ${r.attempts} attempt(s): ${error}` : r.status === 'failed' ? `waiting for a retry after ${r.attempts} attempt(s): ${error}` : 'waiting to run'
      ctx.write(`${`recipe ${r.recipe}`.padEnd(16)} ${how}\n`)
    }
    ctx.write(`headers          ${terminalJson(headers)}\n`)
    // As it arrived (laid out), not parsed and written again; text that is not JSON as one printable string, as before.
    ctx.write(`body\n${typeof body === 'string' ? terminalJson(body, 2) : terminalJsonText(shownBody({ body, raw_body }))}\n`)
  },
})

const eventsReplay = defineCommand({
  name: 'events replay',
  readsStoredData: true,
  usage: '<id> [--wait SECONDS] [--json]',
  summary: 're-run one stored event (any status) through processing in the running service',
  args: [['<id>', 'the event\'s id (event_id), as events list shows it']],
  options: {
    wait: { type: 'string', value: 'SECONDS', help: 'how long to wait for the running service to process it and print the outcome (default 15, 0 to 3600; 0 queues it and returns)' },
    json: JSON_OPTION,
  },
  examples: ['events replay evt_8f2c41 --wait 30'],
  async run(ctx) {
    const id = ctx.positionals[0]
    if (!id) throw new CliError('give the event id: events replay <id>')
    const waitSeconds = intFlag(ctx.values, 'wait', 15)!
    if (waitSeconds < 0 || waitSeconds > 3600) throw new CliError('--wait must be from 0 to 3600 seconds')
    const rt = await ctx.runtime()
    // The running service processes it, so every hook it registered (cache invalidation, recipe
    // triggers) runs; this process has none of them.
    // A dead event is requeued with one attempt left (src/webhooks/processing.ts): if that one fails too, its count
    // reads "after 8 attempts" although the replay made one — said as the replay's outcome instead.
    const wasDead = (await getEvent(rt, id))?.status === 'dead'
    let queued: boolean
    try {
      queued = await requeueEvent(rt, id)
    } catch (error) {
      if (error instanceof EventBusyError) throw new CliError(error.message, 1)
      throw error
    }
    if (!queued) throw new CliError(`no webhook event with id "${id}" (see: events list)`)
    const deadline = rt.clock.now() + waitSeconds * 1000
    let event = await getEvent(rt, id)
    while (event && event.status === 'pending' && rt.clock.now() < deadline) {
      await sleep(rt.clock, 200)
      event = await getEvent(rt, id)
    }
    const status = event?.status ?? 'pending'
    if (ctx.values.json) return ctx.json({ event_id: id, status, attempts: event?.attempts ?? 0, error: event?.last_error ?? null })
    if (status === 'processed') ctx.write(`${id}: processed\n`)
    else if (status === 'pending') {
      // A service registers each of its runtimes while it runs (src/instances.ts): one is up, only slow to get to it.
      const running = waitSeconds > 0 && (await rt.store.db.selectFrom('instances').select('id').limit(1).execute()).length > 0
      const why = waitSeconds === 0 ? '' : running
        ? ` (not picked up within ${waitSeconds} s: the service is up — its workers are busy with a backlog, or its processing is restarting; /readyz says which)`
        : ` (none picked it up within ${waitSeconds} s — is switchboard running?)`
      ctx.write(`${id}: queued; the running service processes it${why}\n`)
    }
    else if (status === 'dead' && wasDead) ctx.write(`${id}: dead again — the replay's attempt failed: ${printable(event?.last_error ?? '', 300)}\n`)
    else ctx.write(`${id}: ${status} after ${event?.attempts ?? 0} attempt(s): ${printable(event?.last_error ?? '', 300)}\n`)
    return status === 'dead' ? 1 : 0
  },
})

const reconcileCommand = defineCommand({
  name: 'reconcile',
  // What it queues is for the running service's database: given another DATA_DIR it made a new one, queued the missed
  // events there (exit 0), and no service ever processed them.
  readsStoredData: true,
  usage: '[--json]',
  summary: 'list conversations upstream and queue whatever webhooks missed (processed by the running service)',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const rt = await ctx.runtime()
    let result: Awaited<ReturnType<typeof reconcile>>
    // Ctrl-C ends the run after the request under way, and gives its lease back: killed by the signal, it held the lease
    // for its 10 minutes, and every run meanwhile (the service's too) said another replica was reconciling.
    const stop = new AbortController()
    const signal = waitForStopSignal()
    void signal.stopped.then(() => stop.abort())
    try {
      result = await reconcile(rt, { signal: stop.signal })
    } catch (error) {
      // In sandbox mode the provider is the running service's own sandbox: with no service, there is nothing to list.
      if (rt.config.sandboxMode && isVoiceApiError(error) && error.type === 'network_error') {
        throw new CliError(`${error.message}\n  in sandbox mode the provider is the service's own sandbox: start the service (npm start), then run reconcile again — or, if it runs with another PORT or HOST, run reconcile with the same`, 1)
      }
      // A key the provider refuses: which setting, which provider — as doctor says it.
      if (isVoiceApiError(error) && (error.status === 401 || error.status === 403)) {
        throw new CliError(`the provider at ${shownUrl(rt.config.upstreamBaseUrl)} refused VOICE_API_KEY (${error.status} ${error.type}: ${error.message}): copy the workspace key from the provider dashboard into VOICE_API_KEY (doctor checks it)`)
      }
      throw error
    } finally {
      signal.release()
    }
    const interrupted = stop.signal.aborted ? 130 : undefined
    if (ctx.values.json) {
      ctx.json(snakeCaseKeys(result))
      return interrupted
    }
    if (result.skipped) return void ctx.write('another replica is reconciling right now (or a run stopped less than 10 minutes ago without giving its lease back); nothing done\n')
    for (const id of result.eventIds) ctx.write(`  queued ${id}\n`)
    for (const u of result.unreadable) ctx.write(`  skipped ${printable(u.conversationId, 100)}: the provider listed it but would not give it (${printable(u.error, 300)})\n`)
    const notes = [
      ...(result.tooOld ? [`${result.tooOld} ended before the oldest events kept (EVENT_RETENTION_DAYS) and were left alone`] : []),
      ...(result.more ? ['the provider has older conversations than one run reads (the newest 5,000): they were not looked at'] : []),
    ]
    ctx.write(`listed ${result.listed} conversation(s) in ${result.pages} page(s); fetched ${result.fetched}; queued ${result.synthesized} missed event(s)${notes.length ? `; ${notes.join('; ')}` : ''}\n`)
    if (interrupted) ctx.write('stopped by a signal: what was queued stays queued; run reconcile again for the rest\n')
    return interrupted
  },
})

export const webhookCommands: CliCommand[] = [eventsList, eventsShow, eventsReplay, reconcileCommand]
