import { copyFileSync, existsSync } from 'node:fs'
import { defaultDncFile } from '../campaigns/dnc.ts'
import { openStore } from '../db/connect.ts'
import { parseDatabaseUrl } from '../db/database-url.ts'
import type { Runtime } from '../runtime.ts'
import { chunks } from '../utils/chunks.ts'

/** Where the service keeps what it checks numbers against. */
export interface ServiceData {
  dataDir: string
  databaseUrl: string
}

/**
 * The do-not-call list the service would check — its `dnc.csv` and its `dnc` table — copied into a recipe test's
 * throw-away data folder and database (`into`), read only: without it `recipes test --csv` planned calls to numbers the
 * service refuses, as if the list were empty. A database that is not there (a service never started) has nothing to
 * copy. A warning for the run when the service's table could not be read (the test then runs with the file alone).
 */
export async function copyServiceDnc(service: ServiceData, into: Runtime): Promise<string | undefined> {
  const file = defaultDncFile({ config: service })
  if (existsSync(file)) copyFileSync(file, defaultDncFile(into))
  const { dialect, location } = parseDatabaseUrl(service.databaseUrl)
  if (dialect === 'sqlite' && (location === ':memory:' || !existsSync(location))) return undefined
  try {
    const store = await openStore(service.databaseUrl)
    try {
      const rows = await store.db.selectFrom('dnc').selectAll().execute()
      for (const part of chunks(rows, 500)) await into.store.db.insertInto('dnc').values(part).onConflict((oc) => oc.column('phone').doNothing()).execute()
    } finally {
      await store.close()
    }
  } catch (error) {
    return `could not read the service's do-not-call table (${(error as Error).message}): the test checked numbers against ${existsSync(file) ? 'its dnc.csv alone' : 'no list'}`
  }
  return undefined
}
