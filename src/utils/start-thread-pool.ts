import { stat } from 'node:fs'

/**
 * Starts libuv's thread pool from the calling thread, if nothing has yet. The pool — where Node runs file reads, DNS
 * lookups, compression and async crypto for every thread of the process — is started by the first thread that uses
 * it, and on Linux a new thread inherits its creator's nice value: started from a thread that lowered its priority
 * (the processing thread, PROCESSING_NICE), the whole pool would run at that priority, and the receiver's and the
 * proxy's work with it. Node 20 starts the pool as it starts; Node 22 and later on first use. Any request starts all
 * of its threads at once, as it is queued: this one's answer is not needed.
 */
export function startThreadPool(): void {
  stat(import.meta.filename, () => {})
}
