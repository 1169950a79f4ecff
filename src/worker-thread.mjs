// The processing side of `serve --role all`, in a worker thread. Started from the bundle the executable
// runs (src/bin.mjs), or else from the sources: module hooks are per thread, so tsx's loader is registered
// here again before the TypeScript entry is imported.
const bundled = process.env.SWITCHBOARD_PROCESSING_ENTRY
if (bundled) {
  // Stack traces name the sources, not the bundle (set per thread).
  process.setSourceMapsEnabled(true)
  await import(bundled)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('./processing-thread.ts')
}
