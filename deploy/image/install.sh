#!/bin/sh
# The image's install step (deploy/image/Dockerfile runs it; test/integration/deploy/image-install
# runs it in a temporary folder). From the packed tarball (`npm run pack`), makes DEST a folder
# that runs with plain node:
#
#   DEST/node_modules/        tools-runtime and its production dependencies, plus its optional
#                             peers better-sqlite3 (the controller's default SQLite store, Brain)
#                             and @lydell/node-pty (terminal sessions; a prebuilt binary)
#   DEST/dist -> node_modules/tools-runtime/dist
#                             so deploy/*.yaml's `node dist/sidecar/main.js` and
#                             `node dist/controller/control-plane-main.js` run from WORKDIR DEST
#   DEST/deploy/grpc-health-probe.mjs
#                             the manifests' exec probes
#
#   install.sh --tarball tools-runtime-VERSION.tgz --dest DIR [--offline]
#
# --offline (CI, no registry): installs from the npm cache with a lock made from the repository's
# own (.ci/consumer-lock.mjs, so the repository must be beside this script), and takes
# better-sqlite3's compiled addon from the repository's own install (same version, same Node).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
tarball=
dest=
offline=
while [ $# -gt 0 ]; do
  case "$1" in
    --tarball) tarball=$2; shift 2 ;;
    --dest) dest=$2; shift 2 ;;
    --offline) offline=1; shift ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$tarball" ] && [ -f "$tarball" ] || { echo "install.sh: --tarball FILE.tgz (from npm run pack) is required" >&2; exit 2; }
[ -n "$dest" ] || { echo "install.sh: --dest DIR is required" >&2; exit 2; }

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
name=$(basename "$tarball")
cp "$tarball" "$dest/$name"
cd "$dest"

if [ -n "$offline" ]; then
  node "$here/../../.ci/consumer-lock.mjs" --dir "$dest" --tarball "$dest/$name" --with better-sqlite3 --with @lydell/node-pty >/dev/null
  npm ci --offline --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error
  # No registry, so better-sqlite3 cannot fetch its prebuilt addon. The repository's own install
  # holds that addon for the same version and this same Node: use it (compiling sqlite3.c takes
  # minutes on two cores). Otherwise build it here, with the installed Node's headers.
  theirs="$here/../../node_modules/better-sqlite3"
  if [ -f "$theirs/build/Release/better_sqlite3.node" ] \
    && [ "$(node -p "require('$theirs/package.json').version")" = "$(node -p "require('./node_modules/better-sqlite3/package.json').version")" ]; then
    mkdir -p node_modules/better-sqlite3/build/Release
    cp "$theirs/build/Release/better_sqlite3.node" node_modules/better-sqlite3/build/Release/
  else
    if [ -f /usr/include/node/node_api.h ]; then export npm_config_nodedir=/usr; fi
    npm_config_build_from_source=true npm rebuild better-sqlite3 --offline --loglevel=error
  fi
else
  cat > package.json <<JSON
{
  "name": "tools-runtime-image",
  "version": "0.0.0",
  "private": true,
  "dependencies": { "tools-runtime": "file:$name", "better-sqlite3": "^12.6.2", "@lydell/node-pty": "^1.1.0" },
  "allowScripts": { "better-sqlite3": true }
}
JSON
  npm install --omit=dev --no-audit --no-fund
fi
[ -f node_modules/tools-runtime/dist/sidecar/main.js ] || { echo "install.sh: npm did not install tools-runtime" >&2; exit 1; }
node -e "require('better-sqlite3')(':memory:').close()" || { echo "install.sh: better-sqlite3 did not build" >&2; exit 1; }
rm -f "$name"
ln -sfn node_modules/tools-runtime/dist dist
mkdir -p deploy
cp "$here/../grpc-health-probe.mjs" deploy/grpc-health-probe.mjs
echo "install.sh: $(du -sh node_modules | cut -f1) in node_modules, $(ls node_modules | wc -l) top-level packages"
