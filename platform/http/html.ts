import type { Response } from 'express';

/**
 * The layout of every page the service renders (sign-in, account, errors, the SCIM guide): server-rendered HTML, no
 * script (but the one page that submits its form itself: a sign-out that needs no question), one column that fits a phone.
 * Every value that reaches a page is escaped.
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

const STYLE = `
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f3f4f6; color: #111827; }
  main { max-width: 400px; margin: 0 auto; padding: 48px 20px; }
  .card { background: #fff; border-radius: 12px; padding: 28px 24px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
  h1 { font-size: 22px; margin: 0 0 8px; }
  h2 { font-size: 17px; margin: 28px 0 8px; padding-top: 16px; border-top: 1px solid #e5e7eb; }
  p { margin: 0 0 16px; color: #4b5563; }
  label { display: block; font-weight: 600; margin: 16px 0 6px; }
  input { width: 100%; font-size: 16px; padding: 12px; border: 1px solid #d1d5db; border-radius: 8px; }
  input:focus { outline: 2px solid #2563eb; border-color: #2563eb; }
  button { width: 100%; margin-top: 20px; padding: 12px; font-size: 16px; font-weight: 600; color: #fff; background: #2563eb; border: 0; border-radius: 8px; }
  .secondary { background: #fff; color: #2563eb; border: 1px solid #2563eb; margin-top: 12px; }
  .error { background: #fef2f2; color: #991b1b; padding: 10px 12px; border-radius: 8px; margin: 0 0 12px; }
  .who { font-weight: 600; color: #111827; overflow-wrap: anywhere; }
  .brand { display: flex; align-items: center; gap: 10px; margin: 0 0 16px; color: #4b5563; font-weight: 600; }
  .brand img { max-height: 32px; max-width: 160px; }
  .codes { font-family: ui-monospace, monospace; font-size: 17px; columns: 2; padding: 12px 16px; background: #f3f4f6; border-radius: 8px; list-style: none; margin: 0 0 16px; }
  .codes li { padding: 4px 0; }
  a { color: #2563eb; }
  .links { margin: 16px 0 0; font-size: 15px; }
  .links a { display: inline-block; margin: 4px 12px 4px 0; }
  table.sessions { width: 100%; border-collapse: collapse; font-size: 15px; margin: 0 0 8px; }
  table.sessions td { padding: 6px 0; border-bottom: 1px solid #e5e7eb; vertical-align: top; overflow-wrap: break-word; }
  /* A client id or name stays whole (ids hold hyphens, which the browser would break at); one too long for the column
     ends in an ellipsis, its full text in the title. */
  table.sessions .client, .session .client { display: inline-block; max-width: 100%; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; vertical-align: bottom; }
  table.sessions td + td { padding-left: 12px; text-align: right; color: #4b5563; }
  .key { font-family: ui-monospace, monospace; word-break: break-all; background: #f3f4f6; padding: 8px; border-radius: 6px; }
  .whoami { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 8px; margin: 0 0 16px; color: #4b5563; }
  button.link { width: auto; margin: 0; padding: 0; background: none; color: #2563eb; font-weight: 400; text-decoration: underline; }
  label.check { display: flex; align-items: center; gap: 8px; font-weight: 400; margin: 16px 0 0; }
  label.check input { width: auto; }
  details.alt { margin: 16px 0 0; font-size: 16px; }
  summary { color: #2563eb; cursor: pointer; }
  ul.scopes li { margin: 0 0 8px; }
  .reference { font-size: 15px; }
  .reference .key { padding: 1px 6px; }
  img.qr { display: block; margin: 12px auto; width: 200px; height: 200px; }
  main.wide { max-width: 1040px; }
  .scroll { overflow-x: auto; margin: 0 0 12px; }
  table.grid { width: 100%; border-collapse: collapse; font-size: 14px; }
  table.grid th, table.grid td { padding: 6px 8px; border-bottom: 1px solid #e5e7eb; text-align: left; vertical-align: top; }
  table.grid th { color: #4b5563; font-weight: 600; white-space: nowrap; }
  table.grid td.n { text-align: right; font-variant-numeric: tabular-nums; }
  .state { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 13px; font-weight: 600; white-space: nowrap; }
  .state.done { background: #dcfce7; color: #166534; }
  .state.running { background: #dbeafe; color: #1e40af; }
  .state.todo { background: #f3f4f6; color: #374151; }
  .state.check { background: #fef3c7; color: #92400e; }
  .state.failed { background: #fee2e2; color: #991b1b; }
  ol.steps { padding-left: 20px; margin: 0 0 12px; }
  ol.steps li { margin: 0 0 10px; }
  ol.steps .why { display: block; color: #4b5563; font-size: 14px; overflow-wrap: anywhere; }
  details { margin: 0 0 12px; font-size: 14px; }
  details li { overflow-wrap: anywhere; }
  .facts { font-size: 14px; color: #374151; margin: 0 0 12px; overflow-wrap: anywhere; }
  @media (max-width: 480px) {
    main.wide { padding: 16px 8px; }
    main.wide .card { padding: 20px 14px; }
    table.grid th, table.grid td { padding: 6px 5px; }
  }
  .notice { background: #ecfdf5; color: #065f46; border: 1px solid #a7f3d0; padding: 10px 12px; border-radius: 8px; margin: 0 0 12px; font-weight: 600; }
  .hint { font-size: 14px; margin: 8px 0 0; }
  .current { margin: 28px 0 0; }
  .session-list { list-style: none; padding: 0; margin: 0 0 8px; }
  .session { padding: 12px 0; border-bottom: 1px solid #e5e7eb; overflow-wrap: break-word; }
  .session p { margin: 0 0 4px; font-size: 15px; }
  .session .device { color: #111827; }
  .session .this-one { color: #065f46; font-weight: 600; }
  .session button { width: auto; padding: 8px 14px; margin-top: 6px; font-size: 15px; }
  .keep { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 12px; }
  .keep button, .keep .button { flex: 1 1 160px; margin: 0; }
  a.button { display: inline-block; text-align: center; padding: 12px; font-size: 16px; font-weight: 600; border-radius: 8px; text-decoration: none; }
  .copied { color: #065f46; font-weight: 600; }
`;

/** What every page is branded with (SignIn:ProductName, SignIn:LogoUrl); set once at start-up. */
let brand: { productName: string; logoUrl?: string } = { productName: 'Identity' };

export function configureBranding(settings: { ProductName: string; LogoUrl?: string }): void {
  brand = { productName: settings.ProductName, logoUrl: settings.LogoUrl };
}

export const productName = () => brand.productName;

/** A page for a person: HTML, never from a cache (a shared computer's Back button). */
export const sendPage = (res: Response, status: number, body: string) =>
  res.status(status).set('cache-control', 'no-store').type('html').send(body);

/** The root URL's page for a person: the product, and the way to their account. */
export function homePage(): string {
  return page(
    'Welcome',
    '<p>This is the sign-in service of your applications.</p><p class="links"><a class="onward" href="/account">Manage your account</a></p>',
  );
}

/** `wide`: a page of tables for operators (the cutover dashboard), still one column on a phone. */
export function page(title: string, body: string, { wide = false } = {}): string {
  const logo = brand.logoUrl ? `<img src="${escapeHtml(brand.logoUrl)}" alt="">` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · ${escapeHtml(brand.productName)}</title>
<style>${STYLE}</style>
</head>
<body><main${wide ? ' class="wide"' : ''}><div class="card">
<div class="brand">${logo}<span>${escapeHtml(brand.productName)}</span></div>
<h1>${escapeHtml(title)}</h1>
${body}
</div></main></body>
</html>`;
}
