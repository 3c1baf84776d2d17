# The service image. Its entry point is the migration command line, so
#   docker run IMAGE --Source:ConnectionString "<SOURCE_CONNECTION_STRING>" --Target:ConnectionString "<TARGET_CONNECTION_STRING>" --DryRun true
# takes the same arguments as `npm run migrate --` (no "--" after the image name). The API and the worker are the
# same image with another entry point (see temporal-compose.yml).
FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# Workers load the prebuilt workflow bundle instead of bundling at every start.
RUN npm run build:workflows && chown -R node:node /app
USER node
EXPOSE 5000
ENTRYPOINT ["node", "--disable-proto=throw", "--import", "tsx", "cli/migrate.ts"]
