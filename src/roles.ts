/**
 * Where a process sits in the event pipeline. `receiver`: the webhook receiver, proxy, sandbox, admin and
 * dashboard — no processing. `worker`: processing (read model, consumers, recipes, the call queue,
 * reconciliation), with only the operations endpoints on HTTP. `all`: both — processing in a worker
 * thread when the database allows it, so the receiver's event loop never runs it.
 * In a module of its own: the CLI checks `--role` before it loads anything the role starts.
 */
export type Role = 'receiver' | 'worker' | 'all'
export const ROLES: readonly Role[] = ['receiver', 'worker', 'all']
