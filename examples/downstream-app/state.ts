/** How the app answers, for tests; by default it approves, confirms, cancels and deletes. */
export interface Behaviour {
  /** Answer Try with approved:false and this reason. */
  rejectWith?: string;
  /** Answer Try with approved:false for users whose e-mail matches this pattern (a regular expression). */
  rejectEmailsMatching?: string;
  /** Answer Try with this HTTP status instead of 200. */
  tryStatus?: number;
  /** Wait this long before answering Try. */
  tryDelayMs?: number;
  /** Answer Try with a redirect to this URL (the service must not follow it). */
  tryRedirectTo?: string;
  /** Answer Try with this exact body (200, application/json): an answer of any size or content, for tests. */
  tryBody?: string;
  confirmStatus?: number;
  confirmDelayMs?: number;
  cancelStatus?: number;
  cancelDelayMs?: number;
  deleteStatus?: number;
  /** Returned on approval; the service applies it only when the user has no organization yet. */
  assignOrganization?: string;
  assignAttributes?: Record<string, string>;
}

export interface RecordedCall {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

export interface AppUserRecord {
  transactionId: string;
  userId: string;
  email: string;
  state: 'pending' | 'confirmed';
  createdAt: number;
}

export interface DownstreamAppOptions {
  apiKey: string;
  behaviour?: Behaviour;
  pendingTtlMs?: number;
}

export interface DownstreamAppState {
  behaviour: Behaviour;
  calls: RecordedCall[];
  /** By transactionId. */
  records: Map<string, AppUserRecord>;
  deletedUsers: string[];
  confirmedUserIds(): string[];
}

/** A fresh state: no records, no calls. */
export function createState(behaviour: Behaviour = {}): DownstreamAppState {
  const state: DownstreamAppState = {
    behaviour,
    calls: [],
    records: new Map(),
    deletedUsers: [],
    confirmedUserIds: () => [...state.records.values()].filter((r) => r.state === 'confirmed').map((r) => r.userId),
  };
  return state;
}

/** Drops the pending records older than `ttl`; says how many. */
export function expirePending(state: DownstreamAppState, ttl: number, now = Date.now()): number {
  let expired = 0;
  for (const [id, record] of state.records) {
    if (record.state === 'pending' && now - record.createdAt > ttl) {
      state.records.delete(id);
      expired++;
    }
  }
  return expired;
}
