import { z } from 'zod';

/** A field of a sign-in or account form: bounded, no NUL (PostgreSQL's text cannot hold one). */
export const formField = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !v.includes('\0'), 'must not contain NUL characters');
