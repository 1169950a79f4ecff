import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { registerCallsPage } from './calls.ts'
import { registerCampaignsPage } from './campaigns.ts'
import { registerDestinationsPage } from './destinations.ts'
import { registerMailPage } from './mail.ts'
import { registerEventDetailPage } from './event-detail.ts'
import { registerEventsPage } from './events.ts'
import { registerOverviewPage } from './overview.ts'
import { registerRecipesPage } from './recipes.ts'

/** Every dashboard page, one module each. */
export function registerPages(app: H3, rt: Runtime): void {
  registerOverviewPage(app, rt)
  registerEventsPage(app, rt)
  registerEventDetailPage(app, rt)
  registerRecipesPage(app, rt)
  registerCallsPage(app, rt)
  registerCampaignsPage(app, rt)
  registerDestinationsPage(app, rt)
  registerMailPage(app, rt)
}
