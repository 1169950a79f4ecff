import { CliError, defineCommand, intFlag, isoFlag, JSON_OPTION, limitOption, type CliCommand } from '../cli-kit.ts'
import type { Runtime } from '../runtime.ts'
import { DELIVERY_STATUSES, DeliveryBusyError, DeliveryNotFoundError, DestinationNotConfiguredError, getDelivery, isDeliveryStatus, isKnownDestination, listDeliveries, notConfigured, replayDelivery, replayFailed, summarizeDestinations } from './deliveries.ts'
import { disabledDestinations, enableDestination } from './state.ts'
import { discardDestination, DestinationStillConfiguredError } from './discard.ts'
import { sendTestEvent } from './test-send.ts'
import { printable } from '../utils/printable.ts'
import { terminalJson } from '../utils/terminal-json.ts'
import { heldDestinations, shownNextAttempt } from './shown-next-attempt.ts'
import { endPauses } from './pauses.ts'

/** `1 delivery`, `68 deliveries`: a count with its noun agreeing. */
function counted(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`
}

function configured(rt: Runtime, name: string | undefined) {
  if (!name) throw new CliError('give the destination name (see: destinations list)')
  const d = rt.config.destinations.list.find((x) => x.name === name)
  if (!d) throw new CliError(`no destination named "${name}" in DESTINATIONS (configured: ${rt.config.destinations.list.map((x) => x.name).join(', ') || 'none'})`)
  return d
}

const list = defineCommand({
  name: 'destinations list',
  readsStoredData: true,
  usage: '[--json]',
  summary: 'configured destinations with state and pending / delivered / dead counts',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const rt = await ctx.runtime()
    const rows = await summarizeDestinations(rt)
    if (ctx.values.json) return ctx.json(rows)
    ctx.table(rows.map((r) => ({ ...r, events: r.events === null ? '—' : Array.isArray(r.events) ? r.events.join(',') : r.events, ordered: r.ordered === null ? '—' : r.ordered })), ['name', 'url', 'events', 'ordered', 'state', 'paused_until', 'pending', 'delivered', 'dead', 'oldest_pending_at', 'paused_reason'])
  },
})

const test = defineCommand({
  name: 'destinations test',
  usage: '<name> [--json]',
  summary: 'send one signed switchboard.test event to a destination now; prints status and latency',
  args: [['<name>', 'a destination\'s name in DESTINATIONS (see destinations list)']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const rt = await ctx.runtime()
    const result = await sendTestEvent(rt, configured(rt, ctx.positionals[0]))
    if (ctx.values.json) ctx.json(result)
    else if (result.ok) ctx.write(`${result.destination}: ${result.status} in ${result.latency_ms} ms (webhook-id ${result.webhook_id})\n`)
    // The sink's words as text that cannot steer the terminal (an escape sequence could rewrite this very line).
    else ctx.write(`${result.destination}: failed${result.status !== null ? ` with ${result.status}` : ''} in ${result.latency_ms} ms: ${printable(result.error ?? '', 300)}${result.response ? `\n  response: ${printable(result.response, 200)}` : ''}\n`)
    return result.ok ? 0 : 1
  },
})

const deliveries = defineCommand({
  name: 'destinations deliveries',
  readsStoredData: true,
  usage: '[--destination NAME] [--status pending|delivered|dead] [--limit N] [--json]',
  summary: 'deliveries, newest first (dead ones are the dead letters)',
  options: {
    destination: { type: 'string', value: 'NAME', help: 'only deliveries to this destination' },
    status: { type: 'string', value: 'S', help: `only deliveries in this state: ${DELIVERY_STATUSES.join(', ')} (dead: every attempt failed)` },
    limit: limitOption(10_000),
    json: JSON_OPTION,
  },
  examples: ['destinations deliveries --destination crm --status dead'],
  async run(ctx) {
    const status = ctx.values.status as string | undefined
    if (status !== undefined && !isDeliveryStatus(status)) throw new CliError(`--status must be one of ${DELIVERY_STATUSES.join(', ')} (got "${status}")`)
    const limit = intFlag(ctx.values, 'limit', 50)!
    if (limit < 1 || limit > 10_000) throw new CliError('--limit must be from 1 to 10000')
    const rt = await ctx.runtime()
    const rows = await listDeliveries(rt, { destination: ctx.values.destination as string | undefined, status, limit })
    if (ctx.values.json) return ctx.json(rows)
    const now = rt.clock.now()
    const held = await heldDestinations(rt)
    const hold = (r: { status: string; destination: string }) => (r.status === 'pending' ? held.get(r.destination) : undefined)
    ctx.table(rows.map((r) => ({ ...r, next_attempt_at: shownNextAttempt(r.next_attempt_at, now, hold(r)), error: r.last_error })), ['id', 'destination', 'event_type', 'status', 'attempts', 'last_status', 'created_at', 'next_attempt_at', 'error'])
  },
})

const show = defineCommand({
  name: 'destinations show',
  readsStoredData: true,
  usage: '<delivery-id> [--json]',
  summary: 'one delivery with every attempt (status, latency, first KB of the response)',
  args: [['<delivery-id>', 'the delivery\'s id, as destinations deliveries shows it']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const id = ctx.positionals[0]
    if (!id) throw new CliError('give the delivery id: destinations show <delivery-id>')
    const rt = await ctx.runtime()
    const found = await getDelivery(rt, id)
    if (!found) throw new CliError(`no delivery with id "${id}" (see: destinations deliveries)`)
    if (ctx.values.json) return ctx.json(found)
    const { payload, attempt_log, ...rest } = found
    const hold = rest.status === 'pending' ? (await heldDestinations(rt)).get(rest.destination) : undefined
    const fields = { ...rest, next_attempt_at: shownNextAttempt(rest.next_attempt_at, rt.clock.now(), hold) }
    for (const [key, value] of Object.entries(fields)) ctx.write(`${key.padEnd(16)} ${printable(String(value ?? ''), 1000)}\n`)
    ctx.write('attempts\n')
    ctx.table(attempt_log.map((a) => ({ ...a, response: a.response?.slice(0, 60) })), ['attempt', 'started_at', 'status', 'latency_ms', 'result', 'error', 'response'])
    ctx.write(`payload\n${terminalJson(payload, 2)}\n`)
  },
})

const replay = defineCommand({
  name: 'destinations replay',
  readsStoredData: true,
  usage: '<delivery-id> | --destination NAME --since ISO [--until ISO] [--json]',
  summary: 'queue one delivery again, or every failed/dead one of a destination in a time range (sent by the running service)',
  args: [['<delivery-id>', 'one delivery to send again (any state but one being sent right now)']],
  options: {
    destination: { type: 'string', value: 'NAME', help: 'instead of one id: every failed or dead delivery of this destination in the time range' },
    since: { type: 'string', value: 'ISO', help: 'with --destination: deliveries of events forwarded at or after this time, e.g. 2026-03-01T00:00:00Z (required)' },
    until: { type: 'string', value: 'ISO', help: 'with --destination: and before this time (default: no end)' },
    json: JSON_OPTION,
  },
  examples: ['destinations replay msg_Qm4dX2…', 'destinations replay --destination crm --since 2026-03-01T00:00:00Z'],
  async run(ctx) {
    const id = ctx.positionals[0]
    const destination = ctx.values.destination as string | undefined
    if (id && destination) throw new CliError('give either a delivery id or --destination, not both')
    if (!id && !destination) throw new CliError('give a delivery id, or --destination NAME --since ISO [--until ISO]')
    if (id && (ctx.values.since !== undefined || ctx.values.until !== undefined)) throw new CliError('--since and --until go with --destination, not with a delivery id')
    const rt = await ctx.runtime()
    if (id) {
      let replayed: Awaited<ReturnType<typeof replayDelivery>>
      try {
        replayed = await replayDelivery(rt, id)
      } catch (error) {
        if (error instanceof DeliveryNotFoundError || error instanceof DestinationNotConfiguredError) throw new CliError(error.message)
        if (error instanceof DeliveryBusyError) throw new CliError(error.message, 1)
        throw error
      }
      if (ctx.values.json) return ctx.json({ queued: 1, ids: [id], waits_for_enable: replayed.waitsForEnable })
      if (replayed.waitsForEnable) return void ctx.write(`${id}: queued, but "${replayed.destination}" is disabled (it answered 410 Gone): it goes out, with the same webhook-id, once you run destinations enable ${replayed.destination}\n`)
      return void ctx.write(`${id}: queued; the running service sends it with the same webhook-id\n`)
    }
    const since = isoFlag(ctx.values, 'since')
    if (since === undefined) throw new CliError('--since is required with --destination (an ISO time such as 2026-03-01T00:00:00Z)')
    const until = isoFlag(ctx.values, 'until') ?? Number.MAX_SAFE_INTEGER
    if (until <= since) throw new CliError('--until must be after --since')
    if (!(await isKnownDestination(rt, destination!))) throw new CliError(`no destination named "${destination}" (see: destinations list)`)
    const unconfigured = notConfigured(rt, destination!)
    if (unconfigured) throw new CliError(unconfigured)
    const queued = await replayFailed(rt, destination!, since, until)
    const waitsForEnable = (await disabledDestinations(rt)).has(destination!)
    if (ctx.values.json) return ctx.json({ queued, waits_for_enable: waitsForEnable })
    const waiting = waitsForEnable && queued > 0 ? `, but "${destination}" is disabled (it answered 410 Gone): they go out once you run destinations enable ${destination}` : ''
    ctx.write(`${counted(queued, 'failed or dead delivery', 'failed or dead deliveries')} of "${destination}" queued again${waiting}\n`)
  },
})

const enable = defineCommand({
  name: 'destinations enable',
  readsStoredData: true,
  usage: '<name>',
  args: [['<name>', 'the disabled or paused destination\'s name (destinations list shows its state)']],
  summary: 're-enable a destination disabled after it answered 410 Gone, or end its circuit breaker\'s pause now: its waiting deliveries go out',
  async run(ctx) {
    const name = ctx.positionals[0]
    if (!name) throw new CliError('give the destination name: destinations enable <name>')
    const rt = await ctx.runtime()
    configured(rt, name)
    const enabled = await enableDestination(rt, name)
    const resumed = await endPauses(rt, name)
    if (enabled) ctx.write(`${name}: enabled\n`)
    else if (resumed) ctx.write(`${name}: pause ended: the running service sends its next delivery as a probe within 5 s (failing, it is paused again)\n`)
    else ctx.write(`${name}: was neither disabled nor paused\n`)
  },
})

const discard = defineCommand({
  name: 'destinations discard',
  readsStoredData: true,
  usage: '<name> [--json]',
  args: [['<name>', 'a destination no longer in DESTINATIONS (destinations list shows it as "(no longer configured)")']],
  summary: 'delete every delivery kept for a destination removed from DESTINATIONS (its pending ones are never sent)',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const name = ctx.positionals[0]
    if (!name) throw new CliError('give the destination name: destinations discard <name>')
    const rt = await ctx.runtime()
    if (!(await isKnownDestination(rt, name))) throw new CliError(`no deliveries kept for a destination named "${name}" (see: destinations list)`)
    let result
    try {
      result = await discardDestination(rt, name)
    } catch (error) {
      if (error instanceof DestinationStillConfiguredError) throw new CliError(error.message)
      throw error
    }
    if (ctx.values.json) return ctx.json(result)
    ctx.write(`${name}: ${counted(result.deliveries, 'delivery', 'deliveries')} discarded (with ${counted(result.attempts, 'attempt', 'attempts')})\n`)
  },
})

export const destinationCommands: CliCommand[] = [list, test, deliveries, show, replay, enable, discard]
