// The processing side of `serve --role all`, in a worker thread: module hooks are per thread, so tsx's
// loader is registered here again before the TypeScript entry is imported.
import { register } from 'tsx/esm/api'

register()
await import('./processing-thread.ts')
