// A program run as another user, for tests running as root: `node test/cli/as-nobody.mjs <uid> <bin> …args` takes the
// uid (as its gid too) and then runs <bin> with the args (test/cli/processes.ts → asAnotherUser passes NOBODY).
// A file rather than `node --input-type=module -e …`: a flag the threads `serve` starts would inherit, and fail on.
const id = Number(process.argv[2])
process.setgid(id)
process.setuid(id)
process.argv.splice(1, 2)
await import(process.argv[1])
