/**
 * A person signing in, without a browser: follows the provider's redirects with a cookie jar and posts the sign-in
 * forms as a browser would (application/x-www-form-urlencoded to each form's action).
 */
/** A form POST as a browser sends one (no redirect followed); `headers` adds to the form's content type. */
export const postForm = (url: string, fields: Record<string, string> | string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: typeof fields === 'string' ? fields : new URLSearchParams(fields).toString(),
  });

/** A client_credentials token request of a client without a secret: its status and its body. */
export async function secretlessClientCredentials(issuer: string, clientId: string, scope: string) {
  const answer = await postForm(`${issuer}/connect/token`, {
    grant_type: 'client_credentials',
    client_id: clientId,
    scope,
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** oidc-provider's words for a grant type the client's metadata does not list. */
export const GRANT_NOT_ALLOWED = 'requested grant type is not allowed for this client';

export class CookieJar {
  /** Cookies by host: a browser keeps those of two identity providers apart (ports do not separate them). */
  private hosts = new Map<string, Map<string, string>>();
  private of(url: string): Map<string, string> {
    const host = new URL(url).hostname;
    let cookies = this.hosts.get(host);
    if (!cookies) this.hosts.set(host, (cookies = new Map()));
    return cookies;
  }
  /** A cookie the browser holds for the host of `url` (set there by another application, such as the source). */
  set(url: string, name: string, value: string): void {
    this.of(url).set(name, value);
  }
  header(url: string): string {
    return [...this.of(url)].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(response: Response, url: string): void {
    const cookies = this.of(url);
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
  }
}

export interface Visit {
  url: string;
  status: number;
  html: string;
}

export interface Browser {
  jar: CookieJar;
  /** Every page shown, in order. */
  pages: Visit[];
  /** GETs `url` and follows redirects until a page, or a redirect to `stopAt` (returned as its URL). */
  open(url: string): Promise<Visit | URL>;
  /** Submits the form of the last page whose action ends with `step`, with these fields (plus its hidden ones). */
  submit(step: string, fields: Record<string, string>): Promise<Visit | URL>;
  /** Posts a form to `url` as a page of another site would (an identity provider's auto-submitting form). */
  post(url: string, fields: Record<string, string>): Promise<Visit | URL>;
}

/** A person's browser; `jar` carries on the cookies of an earlier one (another tab of the same browser). */
export function browser(stopAt: string, jar = new CookieJar()): Browser {
  const pages: Visit[] = [];

  async function follow(response: Response, url: string): Promise<Visit | URL> {
    for (let hops = 0; hops < 20; hops++) {
      jar.take(response, url);
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        const next = new URL(location, url);
        if (next.href.startsWith(stopAt)) return next;
        url = next.href;
        response = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(url) } });
        continue;
      }
      const visit = { url, status: response.status, html: await response.text() };
      // oidc-provider's self-submitting form (its sign-out before switching accounts): a browser with script posts it.
      const autoPost = /document\.forms\[0\]\.submit\(\)/.test(visit.html)
        ? /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(visit.html)
        : null;
      if (autoPost) {
        const fields = Object.fromEntries(
          [...autoPost[2].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)].map((m) => [
            m[1],
            m[2],
          ]),
        );
        url = new URL(autoPost[1], url).href;
        response = await postForm(url, fields, { cookie: jar.header(url) });
        continue;
      }
      pages.push(visit);
      return visit;
    }
    throw new Error(`too many redirects from ${url}`);
  }

  async function post(url: string, fields: Record<string, string>): Promise<Visit | URL> {
    const response = await postForm(url, fields, { cookie: jar.header(url) });
    return follow(response, url);
  }

  return {
    jar,
    pages,
    post,
    async open(url) {
      return follow(await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(url) } }), url);
    },
    async submit(step, fields) {
      const last = pages[pages.length - 1];
      // A form posts to its action, or, through a button's formaction, to another address with the same fields.
      const forms = [...last.html.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)];
      const formAction = (m: RegExpMatchArray) =>
        [...m[2].matchAll(/formaction="([^"]+)"/g)].map((a) => a[1]).find((a) => a.endsWith(step));
      const form = forms.find((m) => m[1].endsWith(step)) ?? forms.find((m) => formAction(m));
      if (!form) throw new Error(`no form for ${step} on ${last.url}:\n${last.html}`);
      const action = form[1].endsWith(step) ? form[1] : formAction(form)!;
      const hidden = Object.fromEntries(
        [...form[2].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
          m[1],
          m[2]
            .replace(/&amp;/g, '&')
            .replace(/&quot;/g, '"')
            .replace(/&#39;/g, "'")
            .replace(/&lt;/g, '<')
            .replace(/&gt;/g, '>'),
        ]),
      );
      // As a browser does: the action is relative to the page that holds the form.
      const url = new URL(action.replace(/&amp;/g, '&'), last.url).href;
      return post(url, { ...hidden, ...fields });
    },
  };
}

/** The text of a page without its markup, for assertions on what a person reads. */
export const textOf = (visit: Visit | URL) =>
  visit instanceof URL
    ? visit.href
    : visit.html
        .replace(/<style>[\s\S]*?<\/style>/, '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ');

/**
 * What an end-user error page's reference stands for: the warn lines the service logged under it (the detail a person
 * is not shown). `warn` spies on the service logger's warn.
 */
export function loggedUnder(page: Visit | URL | string, warn: { mock: { calls: unknown[][] } }): string {
  const html = typeof page === 'string' ? page : page instanceof URL ? page.href : page.html;
  const reference = /class="key">([0-9A-F]{8})</.exec(html)?.[1];
  if (!reference) throw new Error(`no reference on the page:\n${html}`);
  return JSON.stringify(warn.mock.calls.filter((call) => JSON.stringify(call).includes(reference)));
}
