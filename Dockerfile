# select-service container image.
#
#   docker build -t select-service:0.1.0 .
#   docker run --rm -p 8092:8092 -e DYN_ROUTER_USE_KV_EVENTS=false select-service:0.1.0
#
# Build stage: every dependency, the full build (wasm, TypeScript, bundles), then `npm pack`,
# which keeps only what package.json "files" lists (no tests, benchmarks, sources or source maps).
# Runtime stage: the same base with that tarball installed, production dependencies only,
# run as the image's unprivileged `node` user. The repository's test suite (deploy tests) packs,
# installs and starts the package the same way, and runs the HEALTHCHECK command below.
# The base: Node 24, an LTS line the test suite runs under (package.json "engines" lists the tested
# lines; .ci/run runs the suite under each). Debian bookworm, the Debian of the test machines.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the package's "prepare" would build before the sources are here
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build \
 && mkdir /pkg \
 && npm pack --ignore-scripts --pack-destination /pkg \
 && mv /pkg/select-service-*.tgz /pkg/select-service.tgz

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /pkg/select-service.tgz /app/select-service.tgz
RUN npm install --omit=dev --no-audit --no-fund /app/select-service.tgz \
 && npm cache clean --force
ENV PATH=/app/node_modules/.bin:$PATH \
    SELECT_SERVICE_HEALTHCHECK_URL=http://127.0.0.1:8092/health
USER node
# 8092: HTTP API (--port); 9092: replica sync (--replica-sync-port, when used)
EXPOSE 8092 9092
# Liveness with node itself (slim images have no curl); set SELECT_SERVICE_HEALTHCHECK_URL when
# the service listens on another port.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.SELECT_SERVICE_HEALTHCHECK_URL).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["select-service"]
CMD ["--host", "0.0.0.0", "--port", "8092"]
