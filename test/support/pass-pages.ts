import { userCursor, type PageResult, type Pass, type PassContext } from '../../migration/activities/types';

/** Every page of one pass over the key range (after, until], summed: a pass run directly, without Temporal. */
export async function runPages(
  pass: Pass,
  ctx: PassContext,
  after: string | null = null,
  until: string | null = null,
): Promise<PageResult & { pages: number }> {
  const total = { read: 0, created: 0, updated: 0, skipped: 0, warnings: [] as string[], next: null, pages: 0 };
  let cursor = userCursor(after);
  do {
    const page = await pass(ctx, cursor, until);
    for (const key of ['read', 'created', 'updated', 'skipped'] as const) total[key] += page[key];
    total.warnings.push(...page.warnings);
    total.pages++;
    cursor = page.next;
  } while (cursor !== null);
  return total;
}
