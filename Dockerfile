# The image deploy/agent.yaml and deploy/controller.yaml run: tools-runtime:0.1.0.
#
#   docker build -t tools-runtime:0.1.0 .
#
# Three stages. `pack` builds the package exactly as `npm run pack` does (esbuild bundle,
# declarations, derived manifest). `install` runs deploy/image/install.sh, the same script CI runs
# in a temporary folder (test/integration/package/packed-package.test.ts), which installs the
# tarball with its production dependencies and better-sqlite3 into /app. The final stage is Debian 12
# slim with Node 20, bubblewrap for the sidecar's sandbox, /app, and a non-root user: no sources,
# no dev dependencies, no compiler.
# The two manifests start it as `node dist/sidecar/main.js ...` and
# `node dist/controller/control-plane-main.js serve ...` from WORKDIR /app.

FROM node:20-bookworm-slim AS pack
WORKDIR /src
COPY package.json package-lock.json ./
# Install scripts (prepare: the build) need the sources, copied next.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN node .ci/pack.mjs --out /pkg

FROM node:20-bookworm-slim AS install
# better-sqlite3 builds from source where no prebuilt binary matches.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
  && rm -rf /var/lib/apt/lists/*
COPY deploy/image/install.sh /image/deploy/image/install.sh
COPY deploy/grpc-health-probe.mjs /image/deploy/grpc-health-probe.mjs
COPY --from=pack /pkg/ /pkg/
RUN sh /image/deploy/image/install.sh --tarball "$(ls /pkg/tools-runtime-*.tgz)" --dest /app

FROM node:20-bookworm-slim
# bubblewrap: the sidecar runs the model's commands in its sandbox; git and ca-certificates for
# the commands themselves (clone, fetch over TLS).
RUN apt-get update \
  && apt-get install -y --no-install-recommends bubblewrap git ca-certificates \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --gid 10001 tools-runtime \
  && useradd --uid 10001 --gid 10001 --home-dir /home/tools-runtime --create-home --shell /usr/sbin/nologin tools-runtime \
  && mkdir -p /workspace /var/lib/tools-runtime \
  && chown 10001:10001 /workspace /var/lib/tools-runtime
COPY --from=install /app /app
WORKDIR /app
ENV NODE_ENV=production
USER 10001:10001
# The manifests give the command; alone, the image prints the controller's commands.
CMD ["node", "dist/controller/control-plane-main.js", "--help"]
