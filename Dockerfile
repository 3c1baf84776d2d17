# The service image: API and worker are the same image with different commands (see temporal-compose.yml).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# Workers load the prebuilt workflow bundle instead of bundling at every start.
RUN npm run build:workflows && chown -R node:node /app
USER node
EXPOSE 5000
ENTRYPOINT ["node", "--import", "tsx"]
CMD ["api/server.ts"]
