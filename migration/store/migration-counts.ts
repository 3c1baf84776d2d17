/** Rows a page, a partition or a pass read, created, updated and skipped. Workflow-safe: no imports. */
export interface Counts {
  read: number;
  created: number;
  updated: number;
  skipped: number;
}

const COUNT_KEYS = ['read', 'created', 'updated', 'skipped'] as const;

export const noCounts = (): Counts => ({ read: 0, created: 0, updated: 0, skipped: 0 });

/** The one way counts add up: `from` is added into `into`, which is returned. */
export function addCounts<T extends Counts>(into: T, from: Counts): T {
  for (const key of COUNT_KEYS) into[key] += from[key];
  return into;
}

export const sumCounts = (all: readonly Counts[]): Counts =>
  all.reduce<Counts>((total, c) => addCounts(total, c), noCounts());
