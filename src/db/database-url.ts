import { resolve } from 'node:path'

export type Dialect = 'sqlite' | 'postgres'

/** Parses `sqlite:<path>` (relative paths resolve against cwd) or `postgres://…`. */
export function parseDatabaseUrl(url: string): { dialect: Dialect; location: string } {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    return { dialect: 'sqlite', location: path === ':memory:' ? path : resolve(path) }
  }
  if (/^postgres(ql)?:\/\//.test(url)) return { dialect: 'postgres', location: url }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres:// (got "${url.split(':')[0]}:…")`)
}
