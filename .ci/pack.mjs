#!/usr/bin/env node
// `npm run pack [-- --out DIR]`: builds the installable package tools-runtime-<version>.tgz.
//
// The package is the esbuild bundle (dist/, .ci/build.mjs) plus declaration files (tsc, from the
// three entries of package.json "exports"). The repository's package.json describes the
// development checkout: its "dependencies" are what the bundle is made from, and most of them are
// inside dist/ once bundled. So the published manifest is derived, not copied:
//
//   dependencies       the packages the bundle leaves to node_modules (esbuild's metafile: its
//                      externals), those it loads on first use (src/load-on-first-use.ts callers),
//                      and those the declaration files name; at the versions package.json pins.
//   peerDependencies   zod (your schemas and ours are one zod's types), and as optional peers the
//                      packages only some features need that are native or heavy: better-sqlite3
//                      (Brain, the controller's SQLite store), mcporter (MCP-backed skills; it
//                      brings a native bundler), @lydell/node-pty (terminal sessions). A
//                      library-only consumer installs none of them.
//
// Prints one JSON line: { tarball, manifest } (the tarball's absolute path, the derived manifest).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const outAt = process.argv.indexOf('--out');
const out = resolve(outAt === -1 ? join(root, '.tmp') : process.argv[outAt + 1]);

/** Peers: [name, range, optional, why]. */
const peers = [
  ['zod', '^4.0.0', false, 'tool schemas: yours and the runtime must agree on zod 4 types'],
  ['better-sqlite3', '^12.6.2', true, 'native: Brain and the controller SQLite store'],
  ['mcporter', '^0.9.0', true, 'MCP-backed skills; brings a native bundler (rolldown)'],
  ['@lydell/node-pty', '^1.1.0', true, 'native: command sessions with a terminal (tty: true)'],
];

const log = (line) => process.stderr.write(`pack: ${line}\n`);
const run = (command, args, options = {}) => execFileSync(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', ...options });

// Only when stale: tests running beside `npm test`'s packed-package suite start dist/ entries, and a
// build rewrites them in place. The metafile is written by every build; without one, build now.
log('building dist/ when stale (esbuild)');
run(process.execPath, [join(root, '.ci/build.mjs'), '--if-stale']);
if (!existsSync(join(root, '.tmp/build-metafile.json'))) run(process.execPath, [join(root, '.ci/build.mjs')]);
if (!process.argv.includes('--reuse-types')) {
  log('emitting declarations into dist/types (tsc; about a minute on two cores)');
  rmSync(join(root, 'dist/types'), { recursive: true, force: true });
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.types.json']);
}

const repoManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const packageOf = (specifier) => (specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
const bare = (specifier) => !specifier.startsWith('.') && !specifier.startsWith('/') && !specifier.startsWith('node:') && !builtinModules.includes(specifier);

const needed = new Map(); // package -> where it was found needed
const need = (specifier, why) => {
  if (!bare(specifier)) return;
  const name = packageOf(specifier);
  if (!needed.has(name)) needed.set(name, why);
};
// 1. What the bundle imports from node_modules.
const metafile = JSON.parse(readFileSync(join(root, '.tmp/build-metafile.json'), 'utf8'));
for (const output of Object.values(metafile.outputs)) {
  for (const entry of output.imports) if (entry.external) need(entry.path, 'bundle external');
}
// 2. What is loaded on first use (require of a literal specifier at run time).
const sources = ['src', 'sidecar', 'controller'];
const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]));
for (const file of sources.flatMap((dir) => walk(join(root, dir))).filter((file) => file.endsWith('.ts'))) {
  for (const match of readFileSync(file, 'utf8').matchAll(/loadOnFirstUse(?:<[^>]*>)?\('([^']+)'\)/g)) need(match[1], 'loaded on first use');
}
// 3. What the declaration files a consumer's tsc reads name: those reachable from the three
// entries' declarations. tsc also emits declarations for modules only the runtime reaches (the MCP
// client, say); their imports are bundled code, not the consumer's dependencies.
const reached = new Set();
const pending = ['src/index.d.ts', 'sidecar/index.d.ts', 'controller/index.d.ts'].map((file) => join(root, 'dist/types', file));
while (pending.length > 0) {
  const file = pending.pop();
  if (reached.has(file) || !existsSync(file)) continue;
  reached.add(file);
  for (const match of readFileSync(file, 'utf8').matchAll(/(?:from |import\()['"]([^'"]+)['"]/g)) {
    const specifier = match[1];
    if (specifier.startsWith('.')) pending.push(join(dirname(file), specifier.replace(/\.js$/, '.d.ts')));
    else need(specifier, 'declarations');
  }
}

const versions = { ...repoManifest.devDependencies, ...repoManifest.dependencies };
const dependencies = {};
const peerDependencies = {};
const peerDependenciesMeta = {};
for (const [name, range, optional] of peers) {
  peerDependencies[name] = range ?? versions[name];
  if (optional) peerDependenciesMeta[name] = { optional: true };
}
for (const [name, why] of [...needed].sort(([a], [b]) => a.localeCompare(b))) {
  if (name in peerDependencies) continue;
  if (!versions[name]) {
    // esbuild leaves a require() it cannot resolve inside a try as external: the bundled package's
    // own optional add-on (pg's pg-native). Nothing here installs it, and neither does the package.
    if (why !== 'bundle external') throw new Error(`${name} is needed (${why}) but package.json does not pin it`);
    log(`left out ${name}: an optional require of a bundled package, not pinned in package.json`);
    continue;
  }
  dependencies[name] = versions[name];
}

const manifest = {
  name: repoManifest.name,
  version: repoManifest.version,
  description: repoManifest.description,
  type: repoManifest.type,
  engines: repoManifest.engines,
  exports: repoManifest.exports,
  types: repoManifest.types,
  bin: repoManifest.bin,
  files: repoManifest.files,
  dependencies,
  peerDependencies,
  peerDependenciesMeta,
};

const stage = join(root, '.tmp/pack-stage');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
cpSync(join(root, 'README.md'), join(stage, 'README.md'));
// dist/chunks keeps an earlier build's chunks for an hour (a running sidecar may still load one):
// only this build's chunks go in.
const built = new Set(Object.keys(metafile.outputs).map((path) => resolve(root, path)));
const chunks = join(root, 'dist/chunks');
cpSync(join(root, 'dist'), join(stage, 'dist'), {
  recursive: true,
  filter: (source) => !source.endsWith('.map') && !source.endsWith('.build-stamp') && (!source.startsWith(`${chunks}/`) || built.has(source)),
});
mkdirSync(out, { recursive: true });
const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', out], { cwd: stage }));
const tarball = join(out, packed[0].filename);
log(`${packed[0].filename}: ${packed[0].entryCount} files, ${(packed[0].size / 1024).toFixed(0)} KiB packed, ${(packed[0].unpackedSize / 1024).toFixed(0)} KiB unpacked`);
process.stdout.write(`${JSON.stringify({ tarball, integrity: packed[0].integrity, manifest })}\n`);
