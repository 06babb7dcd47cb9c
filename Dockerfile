# Worker image: `node bin/agent-sessions.js worker` against the Temporal server named by TEMPORAL_ADDRESS (see
# docker-compose.yml). No embedded dev server here, so the Temporal binaries are not installed
# (AGENT_SESSIONS_SKIP_SETUP=1 makes the soft setup that `npm ci` runs from `prepare` a no-op).
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV AGENT_SESSIONS_SKIP_SETUP=1
COPY . .
# npm ci runs `prepare` (the TypeScript build); then drop the dev dependencies.
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production AGENT_SESSIONS_SKIP_SETUP=1
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
USER node
CMD ["node", "bin/agent-sessions.js", "worker"]
