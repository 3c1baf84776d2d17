import { randomBytes } from 'node:crypto';
import type { ErrorRequestHandler, Request } from 'express';
import { errors } from 'oidc-provider';
import { logger } from '../../platform/observability/logger';
import { renderErrorPage } from './sign-in-pages';

/**
 * What a person is shown instead of a developer's detail: a short reference, written to the log line that holds the
 * detail, so support finds the one from the other. Answers the reference.
 */
export function errorReference(
  req: Partial<Pick<Request, 'requestId'>> | undefined,
  detail: string,
  context = {},
): string {
  const reference = randomBytes(4).toString('hex').toUpperCase();
  logger.warn({ reference, reqId: req?.requestId, ...context }, `sign-in page error ${reference}: ${detail}`);
  return reference;
}

/** What body-parser and http-errors put on the errors they raise for a body they cannot read. */
type FormError = Error & { status?: number; type?: string; limit?: number; charset?: string; encoding?: string };

/**
 * A form body no page can read (body-parser's refusals: too many fields, too large, a charset or content encoding it
 * does not take, a compressed body that does not decode): its 4xx status and what to tell the sender; undefined for
 * any other error.
 */
function unreadableForm(error: unknown): { status: number; message: string } | undefined {
  const e = error as FormError | undefined;
  if (!(e instanceof Error) || typeof e.status !== 'number' || e.status < 400 || e.status >= 500) return undefined;
  if (e instanceof errors.OIDCProviderError) return undefined;
  const messages: Record<string, string> = {
    'parameters.too.many': 'The form has more fields than this page takes; send only the fields of its form.',
    'entity.too.large': `The form is larger than this page takes (at most ${e.limit} bytes).`,
    'charset.unsupported': `The form is in the charset ${String(e.charset).toUpperCase()}, which this page does not take; send it as UTF-8.`,
    'encoding.unsupported': `The form's Content-Encoding ${e.encoding ?? ''} is not one this page takes (gzip, deflate, br or none).`,
  };
  const message =
    (e.type && messages[e.type]) ??
    `The form could not be read (${e.message}); send it as application/x-www-form-urlencoded in UTF-8.`;
  return { status: e.status, message };
}

/**
 * A sign-in page reached in a way the provider no longer knows (the Back button after the sign-in finished, an old
 * link, cookies cleared), or a form no page can read, is a styled page that says what to do, like every page a
 * browser can reach, never the API's JSON. A fault of the service's own is a 500 page, logged with the request id.
 */
export const signInErrorPage: ErrorRequestHandler = (error: unknown, req, res, _next) => {
  if (error instanceof errors.OIDCProviderError && error.statusCode < 500) {
    if (error instanceof errors.SessionNotFound)
      return res
        .status(400)
        .type('html')
        .send(
          renderErrorPage(
            'This sign-in has expired or was already finished (an old link, or the Back button after signing in). Go back to the application and start again.',
            { title: 'This sign-in has expired' },
          ),
        );
    const reference = errorReference(req, error.error_description ?? error.message, { error: error.error });
    return res
      .status(400)
      .type('html')
      .send(renderErrorPage('This sign-in cannot go on. Go back to the application and start again.', { reference }));
  }
  const unreadable = unreadableForm(error);
  if (unreadable) return res.status(unreadable.status).type('html').send(renderErrorPage(unreadable.message));
  const reference = randomBytes(4).toString('hex').toUpperCase();
  (req.log ?? logger).error({ err: error, reference }, `sign-in: a page failed (reference ${reference})`);
  res
    .status(500)
    .type('html')
    .send(renderErrorPage('Something went wrong on our side; try again in a moment.', { reference }));
};
