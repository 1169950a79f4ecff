// The executable as `nobody` (uid and gid 65534), for tests running as root: `node test/cli/as-nobody.mjs <bin> …args`.
// A file rather than `node --input-type=module -e …`: a flag the threads `serve` starts would inherit, and fail on.
process.setgid(65534)
process.setuid(65534)
process.argv.splice(1, 1)
await import(process.argv[1])
