# Tessera: a two-stage image (docs/operations.md, "Deployment").
#   docker build -t tessera .
#   docker run -p 5000:5000 -v "$PWD/deploy/config:/etc/tessera:ro" tessera
# The config is mounted at /etc/tessera/tessera.json; keys and TLS files beside it or from secrets.

# Node 22 LTS, the supported runtime (docs/operations.md, "Running"); Node 20 is past its end of life.
# Build stage: every dependency, the TypeScript compiled to dist/.
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json index.ts validator.ts ./
COPY gateway gateway
COPY core core
COPY wire wire
COPY workers workers
RUN npm run build

# Runtime stage: production dependencies only, the compiled code, the shipped validators.
FROM node:22-slim
ENV NODE_ENV=production \
    TESSERA_HOST=0.0.0.0 \
    TESSERA_PORT=5000
WORKDIR /app
COPY package.json package-lock.json uws_binaries.sha256 ./
# The HTTP engine's native binaries must be the pinned ones, or the build fails here
# (docs/operations.md, "The HTTP engine").
RUN npm ci --omit=dev --ignore-scripts && sha256sum --check --strict --quiet uws_binaries.sha256 && npm cache clean --force
COPY --from=build /app/dist dist
# TypeScript validators run without a build step (tsx is a production dependency); a config
# points validatorsDir at /app/validators, inside the package, so 'tessera/validator' resolves.
COPY validators validators
COPY config/tessera.schema.json config/tessera.schema.json
# The image's own user, not root; it owns nothing but what it writes (no state: the store is Redis).
USER node
EXPOSE 5000
# /healthz: the process is alive (docs/operations.md, "Health and readiness"). No curl in the
# slim image: Node's own fetch.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:5000/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains (shutdown.drainSeconds), SIGHUP reloads the config; node runs as PID 1 and gets both.
STOPSIGNAL SIGTERM
CMD ["node", "dist/gateway/cli/main.js", "start", "--config", "/etc/tessera/tessera.json"]
