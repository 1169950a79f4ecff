// Types of src/bundle.mjs (plain JavaScript: it runs before any TypeScript loader is registered).
import type { BuildOptions, Plugin } from 'esbuild'

/** File URLs of the bundle's entry points. */
export interface BundleEntries {
  cli: string
  'processing-thread': string
}

/** Where bundles are kept: `node_modules/.cache/switchboard` beside the sources. */
export function defaultCacheDir(srcDir?: string): string
/** Names the sources as they are now (where they are, each file's path, size and mtime) and esbuild's version. */
export function fingerprint(srcDir: string, esbuildVersion: string): string
/** An esbuild plugin giving each TypeScript module `include` accepts its own file's URL for `import.meta.url`. */
export function ownModuleUrls(include: (path: string) => boolean): Plugin
/** The esbuild settings of every bundle of switchboard's code (the service's and the benchmarks'). */
export function bundleSettings(include: (path: string) => boolean): Pick<BuildOptions, 'bundle' | 'format' | 'platform' | 'target' | 'banner' | 'plugins'>
/** The bundle of the current sources, built first if there is none; undefined when none can be had. Never throws. */
export function bundledEntries(options?: { srcDir?: string; cacheDir?: string }): Promise<BundleEntries | undefined>
