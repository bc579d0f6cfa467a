#!/usr/bin/env node
// `npm run build`: bundles the controller and the sidecar into plain JavaScript under dist/ with
// esbuild, so production runs `node dist/.../main.js` and never transpiles TypeScript at start-up.
//
//   node .ci/build.mjs              build now
//   node .ci/build.mjs --if-stale   build only when a source is newer than the last build (presidecar)
//   node .ci/build.mjs --if-stale --then dist/controller/main.js [args...]
//                                   then run that built entry in this same process with args
//                                   (npm start: no second node, no second shell, on the path of every turn)
//
// Layout (every built file sits one folder below dist/, as src/runtime-path.ts expects):
//   dist/sidecar/main.js, dist/controller/main.js   the entry points below
//   dist/chunks/*.js                                 code they share and code loaded on first use
//   dist/proto/                                      the .proto files (for clients; reflection serves src/gen/descriptors.ts)
//   dist/controller/sample-workspace/                what `npm start` copies for its turn
// Packages stay in node_modules when they cannot be bundled (better-sqlite3's native addon) or are
// loaded on first use through src/load-on-first-use.ts (ajv, yaml, turndown).
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = join(root, 'dist');

/** THE list of entry points: output path under dist/ (without .js) -> source. Add new ones here. */
const entryPoints = {
  'sidecar/main': 'sidecar/main.ts',
  'controller/main': 'controller/main.ts',
  // The control plane's CLI: `npm run controller -- serve | workflow | approvals`.
  'controller/control-plane-main': 'controller/control-plane-main.ts',
  // Brain's upkeep worker thread (sidecar/categories/brain/start-brain-worker.ts starts it from here).
  'sidecar/brain-worker': 'sidecar/categories/brain/brain-worker.ts',
  // The package's entries (package.json "exports"): the library, hosting tools, driving sidecars.
  // Built with the bins so they share chunks: a --tools module loaded by the sidecar bin gets the
  // same ToolRuntimeError class and zod build as the sidecar itself.
  'lib/index': 'src/index.ts',
  'lib/sidecar': 'sidecar/index.ts',
  'lib/controller': 'controller/index.ts',
};

/** Copied as they are: [source, destination under dist/]. */
const assets = [
  ['proto', 'proto'],
  ['controller/sample-workspace', 'controller/sample-workspace'],
  ['controller/console/page', 'controller/console/page'],
];

/** What a build depends on: if any is newer than the stamp, the build is stale. */
const inputs = ['src', 'sidecar', 'controller', 'proto', 'package.json', 'package-lock.json', '.ci/build.mjs'];
const stamp = join(dist, '.build-stamp');
const lock = join(root, '.tmp', 'build.lock');

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function isStale() {
  const built = statSync(stamp, { throwIfNoEntry: false });
  if (!built) return true;
  return inputs.some((input) => newestMtime(join(root, input)) > built.mtimeMs);
}

/** One build at a time (npm start in two terminals, tests in parallel): a lock folder, bounded wait. */
async function withLock(action) {
  mkdirSync(dirname(lock), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      // A lock older than two minutes belongs to a build that died.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`another build holds ${relative(root, lock)} for over two minutes`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await action();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * zod re-exports every one of its ~50 locales (`z.locales`), about 500 KB of source nobody here
 * uses: error messages are English (zod's default, configured by zod itself). Only `en` is kept;
 * `z.locales.en` still works, any other locale is absent from the build.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), '../locales/en.js'), namespace: 'zod-locales' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
    }));
  },
};

async function build() {
  const esbuild = await import('esbuild');
  const started = Date.now();
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(entryPoints).map(([out, source]) => [out, join(root, source)])),
    outdir: dist,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'bundle',
    // A native addon cannot be bundled; it is only loaded when the Brain database opens. grpc-js
    // requires proto-loader (and with it protobufjs) only for channelz and ORCA, which we do not
    // enable: left out, the sidecar reads about 300 KB less source at every start.
    external: ['better-sqlite3', '@grpc/proto-loader'],
    // Bundled CommonJS packages call require() for Node's built-ins (through esbuild's __require, in
    // one shared chunk). Every chunk gets the banner, so it makes its require on the first call only:
    // a createRequire per chunk read at start-up cost the sidecar about 2 ms before it listened.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; let __requireHere; const __requireOnce = () => (__requireHere ??= __createRequire(import.meta.url)); function require(...args) { return __requireOnce()(...args); } require.resolve = (...args) => __requireOnce().resolve(...args);",
    },
    sourcemap: 'linked',
    legalComments: 'none',
    // Less source text to read, parse and keep: about 4 MiB less resident for the sidecar. Names stay
    // (readable stack traces); the linked source map gives the TypeScript lines (node --enable-source-maps).
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
    metafile: true,
    plugins: [zodEnglishOnly],
  });
  // Files rewritten in place, not a fresh folder: a sidecar already running from dist/ may still
  // load a chunk on first use. Chunks of earlier builds go once they are an hour old.
  const written = new Set(Object.keys(result.metafile.outputs).map((path) => join(root, path)));
  const chunks = join(dist, 'chunks');
  for (const name of readdirSync(chunks)) {
    const path = join(chunks, name);
    if (!written.has(path) && Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { force: true });
  }
  for (const [source, destination] of assets) cpSync(join(root, source), join(dist, destination), { recursive: true });
  // What the bundle leaves to node_modules: .ci/pack.mjs derives the package's dependencies from it.
  writeFileSync(join(root, '.tmp', 'build-metafile.json'), JSON.stringify(result.metafile));
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  process.stderr.write(`built ${Object.keys(entryPoints).length} entry points into dist/ in ${Date.now() - started} ms\n`);
}

const thenAt = process.argv.indexOf('--then');
const ourArgs = thenAt === -1 ? process.argv.slice(2) : process.argv.slice(2, thenAt);
const ifStale = ourArgs.includes('--if-stale');
if (!ifStale || isStale()) {
  await withLock(async () => {
    // Another process may have built while this one waited for the lock.
    if (!ifStale || isStale()) await build();
  });
}

if (thenAt !== -1) {
  const entry = process.argv[thenAt + 1];
  if (!entry) throw new Error('--then needs the built entry to run, e.g. dist/controller/main.js');
  const script = resolve(root, entry);
  // The entry reads its own arguments from process.argv.slice(2), as if node had started it.
  process.argv = [process.argv[0], script, ...process.argv.slice(thenAt + 2)];
  await import(pathToFileURL(script).href);
}
