import { join } from 'node:path'
import { migrate, openStore } from '../../src/db/connect.ts'

/**
 * Gives `dataDir` the database a started service leaves there (SQLite, migrated, empty): commands that read what the
 * service stored refuse a DATA_DIR without one (src/cli-stored-data.ts). Returns the folder.
 */
export async function withDatabase(dataDir: string): Promise<string> {
  const store = await openStore(`sqlite:${join(dataDir, 'switchboard.db')}`)
  try {
    await migrate(store)
  } finally {
    await store.close()
  }
  return dataDir
}
