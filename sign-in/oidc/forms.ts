import { z } from 'zod';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';

/** A field of a sign-in or account form: bounded, no NUL (PostgreSQL's text cannot hold one). */
export const formField = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !v.includes('\0'), 'must not contain NUL characters');

/** An e-mail address typed into a form (the sign-in's first step, "forgot your password?"). */
export const emailAddressField = formField(FIELD_BOUNDS.email).pipe(z.email());
export const emailForm = z.object({ email: emailAddressField });
