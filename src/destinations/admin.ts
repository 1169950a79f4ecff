import { HTTPError, type H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { adminRoute } from '../utils/admin-auth.ts'
import { runProcessingTask } from '../coordination/processing-task.ts'
import { DELIVERY_STATUSES, DeliveryBusyError, DeliveryNotFoundError, DestinationNotConfiguredError, destinationsOverviewTask, getDelivery, isDeliveryStatus, isKnownDestination, listDeliveries, notConfigured, replayDelivery, replayFailedTask } from './deliveries.ts'
import { enableDestination } from './state.ts'
import { endPauses } from './pauses.ts'
import { discardDestination, DestinationStillConfiguredError } from './discard.ts'
import { adminTime } from '../utils/admin-time.ts'
import { readAdminJsonObject } from '../utils/admin-body.ts'
import { disabledDestinations } from './state.ts'

/**
 * `/admin/destinations`: list, deliveries (dead letters with `?status=dead`), one delivery with its
 * attempts, replay of one delivery or of a destination's failures in a time range, re-enable — behind
 * the ADMIN_TOKEN rules.
 */
export function registerDestinationAdminRoutes(app: H3, rt: Runtime): void {
  app.get('/admin/destinations', adminRoute(rt, async (event) => {
    return { data: (await runProcessingTask(rt, destinationsOverviewTask, {})).destinations }
  }))

  app.get('/admin/destinations/deliveries', adminRoute(rt, async (event) => {
    const q = event.url.searchParams
    const status = q.get('status') || undefined
    if (status !== undefined && !isDeliveryStatus(status)) throw new HTTPError({ status: 400, message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` })
    const limit = q.get('limit')
    if (limit !== null && !/^\d+$/.test(limit)) throw new HTTPError({ status: 400, message: 'limit must be a whole number' })
    return {
      data: await listDeliveries(rt, {
        destination: q.get('destination') ?? undefined,
        status,
        since: adminTime(q.get('since'), 'since'),
        until: adminTime(q.get('until'), 'until'),
        limit: limit === null ? undefined : Number(limit),
      }),
    }
  }))

  app.get('/admin/destinations/deliveries/:id', adminRoute(rt, async (event) => {
    const id = decodeURIComponent(event.context.params?.id ?? '')
    const found = await getDelivery(rt, id)
    if (!found) throw new HTTPError({ status: 404, message: `no delivery with id "${id}"` })
    return { data: found }
  }))

  app.post('/admin/destinations/deliveries/:id/replay', adminRoute(rt, async (event) => {
    const id = decodeURIComponent(event.context.params?.id ?? '')
    let replayed: Awaited<ReturnType<typeof replayDelivery>>
    try {
      replayed = await replayDelivery(rt, id)
    } catch (error) {
      if (error instanceof DeliveryNotFoundError) throw new HTTPError({ status: 404, message: error.message })
      if (error instanceof DeliveryBusyError || error instanceof DestinationNotConfiguredError) throw new HTTPError({ status: 409, message: error.message })
      throw error
    }
    event.res.status = 202
    return { data: { queued: 1, ids: [id], waits_for_enable: replayed.waitsForEnable } }
  }))

  /** Body (JSON, optional): `{ "since": ISO, "until": ISO }`; default: everything failed or dead. */
  app.post('/admin/destinations/:name/replay', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    const body = await readAdminJsonObject(event, { since: 'ISO', until: 'ISO' })
    const since = adminTime(body.since, 'since') ?? 0
    const until = adminTime(body.until, 'until') ?? Number.MAX_SAFE_INTEGER
    if (until <= since) throw new HTTPError({ status: 400, message: '"until" must be after "since"' })
    if (!(await isKnownDestination(rt, name))) {
      throw new HTTPError({ status: 404, message: `no destination named "${name}"` })
    }
    const unconfigured = notConfigured(rt, name)
    if (unconfigured) throw new HTTPError({ status: 409, message: unconfigured })
    event.res.status = 202
    const queued = await runProcessingTask(rt, replayFailedTask, { destination: name, since, until })
    return { data: { queued, waits_for_enable: (await disabledDestinations(rt)).has(name) } }
  }))

  app.post('/admin/destinations/:name/enable', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    if (!(await isKnownDestination(rt, name))) throw new HTTPError({ status: 404, message: `no destination named "${name}"` })
    const unconfigured = notConfigured(rt, name)
    if (unconfigured) throw new HTTPError({ status: 409, message: unconfigured })
    // Disabled after a 410: enabled. Paused by its breaker: the pause ends, the next delivery is the probe.
    const enabled = await enableDestination(rt, name)
    return { data: { enabled, resumed: await endPauses(rt, name) } }
  }))

  /** Deletes the deliveries kept for a destination removed from DESTINATIONS (its pending ones are never sent). */
  app.post('/admin/destinations/:name/discard', adminRoute(rt, async (event) => {
    const name = decodeURIComponent(event.context.params?.name ?? '')
    if (!(await isKnownDestination(rt, name))) throw new HTTPError({ status: 404, message: `no destination named "${name}"` })
    try {
      return { data: await discardDestination(rt, name) }
    } catch (error) {
      if (error instanceof DestinationStillConfiguredError) throw new HTTPError({ status: 409, message: error.message })
      throw error
    }
  }))
}
