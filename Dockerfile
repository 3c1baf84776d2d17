# The service image. Its entry point is the migration command line, so
#   docker run IMAGE --Source:ConnectionString "<SOURCE_CONNECTION_STRING>" --Target:ConnectionString "<TARGET_CONNECTION_STRING>" --DryRun true
# takes the same arguments as `npm run migrate --` (no "--" after the image name). The API and the worker are the
# same image with another entry point (see temporal-compose.yml): node dist/api/server.js, node dist/workers/worker.js.

# Build: the TypeScript compiled to JavaScript and the workflow bundle prebuilt, with the development dependencies.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Run: plain node, production dependencies only, the compiled output, as the unprivileged node user.
FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# The heap limit and malloc arenas every entry point that runs a migration worker starts with (workers/heap-limit.ts).
ENV NODE_OPTIONS=--max-old-space-size=448
ENV MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
EXPOSE 5000 9464
ENTRYPOINT ["node", "--disable-proto=throw", "dist/cli/migrate.js"]
