// A package-lock.json for a project that installs the packed tarball, made from this repository's
// own lock: every package at the version and integrity `npm ci` installed here. With it,
// `npm ci --offline` installs the tarball from the npm cache alone. Without it npm would need the
// registry's package documents, which `npm ci` never caches (it installs from the lock): a clean
// CI machine after `npm ci` holds every tarball but no document, so plain `npm install --offline`
// fails there with ENOTCACHED. Used by test/integration/package/ and deploy/image/install.sh.
//
//   node .ci/consumer-lock.mjs --dir PROJECT --tarball FILE.tgz [--with better-sqlite3 ...]
//     writes PROJECT/package.json and PROJECT/package-lock.json (the tarball is copied in).
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

const root = fileURLToPath(new URL('../', import.meta.url));

/**
 * Writes `package.json` and `package-lock.json` into `dir` for a project depending on the tarball
 * (copied into `dir`) and on `extra` packages (optional peers such as better-sqlite3).
 * @throws Error when a package the tarball needs is not in this repository's lock.
 */
export function writeConsumerProject({ dir, tarball, extra = [], name = 'tools-runtime-consumer' }) {
  mkdirSync(dir, { recursive: true });
  const tarballName = basename(tarball);
  if (resolve(tarball) !== resolve(dir, tarballName)) copyFileSync(tarball, join(dir, tarballName));
  const bytes = readFileSync(join(dir, tarballName));
  const integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', join(dir, tarballName), 'package/package.json'], { encoding: 'utf8' }));
  const repoLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const available = repoLock.packages;

  const packages = {};
  const queue = [];
  const want = (name, from, required) => queue.push({ name, from, required });
  const runtimePath = 'node_modules/tools-runtime';
  packages[runtimePath] = {
    version: manifest.version,
    resolved: `file:${tarballName}`,
    integrity,
    license: manifest.license,
    dependencies: manifest.dependencies,
    peerDependencies: manifest.peerDependencies,
    peerDependenciesMeta: manifest.peerDependenciesMeta,
    bin: manifest.bin,
    engines: manifest.engines,
  };
  for (const dependency of Object.keys(manifest.dependencies ?? {})) want(dependency, runtimePath, true);
  for (const [peer, range] of Object.entries(manifest.peerDependencies ?? {})) {
    if (!manifest.peerDependenciesMeta?.[peer]?.optional || extra.includes(peer)) want(peer, runtimePath, true);
    void range;
  }
  for (const dependency of extra) want(dependency, '', true);

  while (queue.length > 0) {
    const { name, from, required } = queue.shift();
    const at = locate(available, name, from);
    if (!at) {
      if (required) throw new Error(`${name} (needed by ${from || 'the project'}) is not in this repository's package-lock.json`);
      continue;
    }
    if (packages[at]) continue;
    const { dev, devOptional, peer, optional, ...entry } = available[at];
    void dev, void devOptional, void peer;
    packages[at] = optional ? { ...entry, optional: true } : entry;
    for (const dependency of Object.keys(entry.dependencies ?? {})) want(dependency, at, true);
    // Platform-specific optional packages: only those this lock holds (npm skips the others).
    for (const dependency of Object.keys(entry.optionalDependencies ?? {})) want(dependency, at, false);
    for (const peerName of Object.keys(entry.peerDependencies ?? {})) {
      if (!entry.peerDependenciesMeta?.[peerName]?.optional) want(peerName, at, true);
    }
  }

  const dependencies = { 'tools-runtime': `file:${tarballName}` };
  for (const dependency of extra) dependencies[dependency] = available[`node_modules/${dependency}`].version;
  // npm 11 runs only the install scripts a project allows: better-sqlite3's builds its addon.
  const allowScripts = Object.fromEntries(extra.filter((dependency) => available[`node_modules/${dependency}`].hasInstallScript).map((dependency) => [dependency, true]));
  const projectManifest = { name, version: '0.0.0', private: true, type: 'module', dependencies, ...(Object.keys(allowScripts).length > 0 ? { allowScripts } : {}) };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(projectManifest, null, 2)}\n`);
  const lock = { name, version: '0.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '0.0.0', dependencies }, ...sorted(packages) } };
  writeFileSync(join(dir, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  return { integrity, packages: Object.keys(packages).length };
}

/** Where Node would find `name` from the package at lock path `from` ('' for the project). */
function locate(available, name, from) {
  let base = from;
  for (;;) {
    const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (available[candidate] && !available[candidate].link) return candidate;
    if (!base) return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut === -1 ? '' : base.slice(0, cut);
  }
}

function sorted(object) {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => a.localeCompare(b)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const option = (flag) => {
    const at = process.argv.indexOf(flag);
    return at === -1 ? undefined : process.argv[at + 1];
  };
  const dir = option('--dir');
  const tarball = option('--tarball');
  if (!dir || !tarball || !existsSync(tarball)) {
    process.stderr.write('usage: node .ci/consumer-lock.mjs --dir PROJECT --tarball FILE.tgz [--with PACKAGE ...]\n');
    process.exit(2);
  }
  const extra = process.argv.flatMap((value, index) => (process.argv[index - 1] === '--with' ? [value] : []));
  const written = writeConsumerProject({ dir: resolve(dir), tarball: resolve(tarball), extra });
  process.stdout.write(`${JSON.stringify(written)}\n`);
}
