import { dirname } from 'node:path';
import express, { Router } from 'express';
import { buildOpenApiDocument } from '../openapi/document';
import type { Operations } from '../../platform/http/operations';

/** The Swagger UI files the reference page loads, served from the npm package (never a CDN). */
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png'];

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>API reference · Identity provisioning service</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/reference.js"></script>
</body>
</html>
`;

// A script file of its own rather than inline, so the page works under a policy that forbids inline scripts.
const SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  tryItOutEnabled: false,
  defaultModelsExpandDepth: 0,
});
`;

/** `GET /openapi.json`: the OpenAPI 3.1 document built from the route table, once, for the service's public URL. */
export function apiDocumentOperations(publicUrl: string): Operations {
  const document = JSON.stringify(buildOpenApiDocument(publicUrl));
  return { getOpenApiDocument: (_req, res) => res.type('application/json').send(document) };
}

/**
 * `GET /docs`, a reference page for people rendering the document (with the Swagger UI files it loads): a page, not an
 * operation of the API, so it is mounted beside the route table. Public: it describes the API, it holds no data.
 */
export function apiReferencePage(): Router {
  const router = Router();
  router.get('/docs', (_req, res) => res.type('html').send(PAGE));
  router.get('/docs/assets/reference.js', (_req, res) => res.type('text/javascript').send(SCRIPT));
  const files = express.static(SWAGGER_UI_DIR, { index: false, fallthrough: false, maxAge: '1h' });
  router.use('/docs/assets', (req, res, next) => (ASSETS.includes(req.path.slice(1)) ? files(req, res, next) : next()));
  return router;
}
