import { describe, expect, it } from 'vitest'
import { openStore } from '../../src/db/connect.ts'
import { checkDatabase } from '../../src/doctor/checks.ts'

/**
 * A wrong password or database name is the server answering — refusing — not silence: doctor said "postgres does not
 * answer: 3D000: database … does not exist" (an operator probe), which sends one looking at the network.
 */
describe.skipIf(!process.env.DATABASE_URL_TEST)('doctor: Postgres refusing the connection', () => {
  it('says the server refused, and to check the user, password and database name', async () => {
    const url = new URL(process.env.DATABASE_URL_TEST!)
    url.pathname = '/sb_doctor_no_such_database'
    const store = await openStore(url.toString())
    try {
      const checked = await checkDatabase(store)
      expect(checked).toMatchObject({ status: 'problem', fix: 'check the user, password and database name in DATABASE_URL' })
      expect(checked.detail).toMatch(/^postgres refused the connection: .*sb_doctor_no_such_database.* does not exist/)
    } finally {
      await store.close()
    }
  })
})
