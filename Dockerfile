# plan-swarm node image: one process per container, one role per process.
#
#   docker build -t plan-swarm:local .
#   docker run --rm -e PLAN_SWARM_ROLE=scorer -v scorer:/data plan-swarm:local
#   docker run --rm plan-swarm:local --help
#
# Every flag can also come from the environment (PLAN_SWARM_<FLAG>), which is
# how docker-compose.yml configures the services. test/e2e/compose-topology
# reads the ENV and ENTRYPOINT lines below and runs them as processes, so keep
# them plain: `ENV KEY=value` pairs and an exec-form ENTRYPOINT.

# ---- build stage: production node_modules --------------------------------------------
# better-sqlite3 downloads a prebuilt binary when it can and compiles from
# source when it cannot (no route to the download host, a libc it has no
# build for): the compiler and python live here only, not in the image.
FROM node:20-slim AS deps
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# tsx is a runtime dependency (the entrypoint runs the TypeScript sources), so
# --omit=dev leaves everything the CLI needs and drops vitest, eslint and tsc.
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm cache clean --force

# ---- runtime image ------------------------------------------------------------------
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production

COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY roles ./roles

# Data lives in /data. PLAN_SWARM_HOME (not PLAN_SWARM_DATA_DIR) is the
# default: each process takes the lowest free /data/<swarm>/<role>-<n> under a
# lock, so replicas sharing one volume never share a store, and a restarted
# container gets its own dir back. Set PLAN_SWARM_DATA_DIR=/data for a
# container that owns its volume alone. The status endpoint is on in every
# container (the healthcheck needs it); a --http flag overrides it.
ENV PLAN_SWARM_HOME=/data PLAN_SWARM_HTTP=0.0.0.0:8080
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]

# 4001: libp2p when listening on /ip4/0.0.0.0/tcp/4001 (compose does); 8080: --http.
EXPOSE 4001 8080
USER node

# No curl in slim: node's fetch asks GET /status on the --http address from PLAN_SWARM_HTTP.
HEALTHCHECK --interval=15s --timeout=5s --start-period=40s --retries=3 \
  CMD ["node", "-e", "const a=process.env.PLAN_SWARM_HTTP||'';const m=/^\\[?([^\\]]*)\\]?:(\\d+)$/.exec(a);if(!m){console.error('PLAN_SWARM_HTTP is not set: no /status to check');process.exit(1)}const h=m[1]===''||m[1]==='0.0.0.0'?'127.0.0.1':m[1]==='::'?'[::1]':m[1].includes(':')?'['+m[1]+']':m[1];fetch('http://'+h+':'+m[2]+'/status',{signal:AbortSignal.timeout(4000)}).then(r=>{console.log('GET /status',r.status);process.exit(r.ok?0:1)},e=>{console.error(String(e));process.exit(1)})"]

ENTRYPOINT ["node", "--import", "tsx", "src/cli.ts"]
