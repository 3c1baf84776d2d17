import type { RequestHandler, Response } from 'express';
import type { Operations } from '../../platform/http/operations';
import { z } from 'zod';
import { emailAddress, passwordText, personName } from '../../platform/http/fields';
import { passwordPolicyProblem, sendProblem } from '../../platform/http/problem';
import { answer, toHttpOutcome } from '../../provisioning/outcome-answers';
import type { Registration } from '../registration';

export const registrationSchema = z
  .object({
    email: emailAddress,
    password: passwordText,
    firstName: personName.optional(),
    lastName: personName.optional(),
  })
  .strict();

/** 503 with Retry-After: the read-through window could not tell whether the source holds the address. */
function sourceUnavailable(res: Response, retryAfterSeconds: number, message?: string) {
  res.setHeader('Retry-After', String(retryAfterSeconds));
  return sendProblem(res, {
    status: 503,
    title: 'Registration unavailable',
    detail: `email: whether this address has an account in the previous system cannot be checked now; retry after ${retryAfterSeconds} s${message ? `. ${message}` : ''}`,
  });
}

/**
 * Self-service registration: public, rate limited per client IP, provisions into every configured app (the one path
 * the sign-up page takes too, sign-in/registration.ts). With Auth:RequireConfirmedEmail a new address and a taken one
 * get the same answer (202, the same body) in the same time, as "forgot your password?" does; the mail tells the
 * address's owner which it was. An app's refusal of a new address is still 422 (spec).
 */
export function registerOperations({ registration }: { registration: Registration }): Operations {
  const limit = registration.limit((res) =>
    sendProblem(res, {
      status: 429,
      title: 'Too many registrations',
      detail: `at most ${registration.budget.PermitLimit} registrations per ${registration.budget.WindowSeconds} s from one client; retry later`,
    }),
  );

  const register: RequestHandler = async (req, res) => {
    const registrant = registrationSchema.parse(req.body);
    const result = await registration.register(registrant);
    switch (result.status) {
      case 'sso-domain':
        return sendProblem(res, {
          status: 400,
          title: 'Registration not allowed for this domain',
          detail: `email: addresses of ${result.domain} sign in through their organization's identity provider; sign in there instead of registering`,
          errors: [
            {
              field: 'email',
              message: `addresses of ${result.domain} sign in through their organization's identity provider`,
            },
          ],
        });
      case 'weak-password':
        return sendProblem(res, passwordPolicyProblem(result.violations));
      case 'source-unavailable':
        return sourceUnavailable(res, result.retryAfterSeconds, result.message);
      case 'mailed':
        return res.status(202).json({
          email: registrant.email,
          detail: `check the mailbox of ${registrant.email}: the link in the mail we sent confirms the address and completes the registration`,
        });
      case 'outcome':
        return answer(res, toHttpOutcome(result.outcome, 201, { revealIds: false }));
    }
  };

  return { register: [limit, register] };
}
