# syntax=docker/dockerfile:1
#
# One image for every service; SERVICE picks the one a container runs:
#   docker build -t fundraise/backend .
#   docker run -e SERVICE=users -e DATABASE_URL=... -e AMQP_URL=... fundraise/backend
# (`--build-arg SERVICE=users` bakes a default instead.)

# Same Node major as the repo's pinned `node` devDependency.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS base
# pnpm 10 then switches itself to the exact version in package.json's packageManager field.
RUN npm install --global pnpm@10
WORKDIR /app

# The files that decide what gets installed, and nothing else: editing a source file leaves this stage's
# output byte-identical, so the install layer below stays cached. The globs follow pnpm-workspace.yaml.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && cp --parents package.json pnpm-lock.yaml pnpm-workspace.yaml \
      packages/*/package.json services/*/package.json /manifests/

FROM base AS build
COPY --from=manifests /manifests/ ./
# Dev dependencies stay: tsx runs the TypeScript sources directly, there is no build step.
RUN --mount=type=cache,id=pnpm-store,target=/pnpm-store \
    pnpm install --frozen-lockfile --store-dir /pnpm-store
COPY . .

FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
# Owned by root and run as another user: the process cannot rewrite its own code.
COPY --from=build /app ./
COPY --chmod=755 <<'EOF' /usr/local/bin/run-service
#!/bin/sh
set -e
main="services/${SERVICE}/src/main.ts"
if [ -z "$SERVICE" ] || [ ! -f "$main" ]; then
  echo "SERVICE must name a service: $(cd services && ls -d */src/main.ts | cut -d/ -f1 | tr '\n' ' ')" >&2
  exit 64
fi
# One process, no tsx CLI wrapper: node is PID 1 and gets SIGTERM itself, which starts the service's
# graceful shutdown (stop consuming, finish in-flight work, close connections).
exec node --import tsx "$main"
EOF
ARG SERVICE=""
ENV SERVICE=${SERVICE}
# Loopback is unreachable from outside a container.
ENV HOST=0.0.0.0
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd: the image's `node` user.
USER 1000:1000
CMD ["run-service"]
