import { z } from 'zod';

/** First and last names, as every user-creation body takes them. */
export const personName = z.string().trim().min(1).max(256);
