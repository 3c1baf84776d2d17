import type { Request, Response } from 'express';
import type { AppConfig } from '../../platform/config/config-schema';
import { escapeHtml, page, sendPage } from '../../platform/http/html';
import type { Db } from '../../platform/store/database';
import { countSigningKeysByOrigin } from '../../platform/store/signing-keys';
import { listMarkers, passProgress, type MarkerRow } from '../store/migration-markers';
import { listReadThroughTallies, type ReadThroughTally } from '../store/read-through-tallies';
import { cutoverSteps, refreshTokenTally, type CutoverStep } from './cutover-steps';

/** Where operators read the cutover: the page sign-in serves behind an IdentityAdmin sign-in. */
export const CUTOVER_DASHBOARD_PATH = '/admin/migration';

/** A pass as a marker holds it: its counts, whether it ended, its warnings, and whatever else it reported. */
interface PassView {
  pass: string;
  done: boolean;
  counts: Record<'read' | 'created' | 'updated' | 'skipped', number>;
  /** Wall time of the pass, once it ended. */
  seconds?: number;
  warnings: string[];
  moreWarnings: number;
  /** Every other figure the pass reported (clients' readiness, refresh tokens, what a new pass adds), flattened. */
  facts: Array<[string, string]>;
}

const COUNTED = ['read', 'created', 'updated', 'skipped'] as const;
/** Keys of a pass report the table shows itself, or that say nothing to an operator. */
const SHOWN = new Set<string>(['pass', ...COUNTED, 'warnings', 'moreWarnings', 'done', 'seconds', 'pages']);

const words = (key: string) => key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

/** The leaves of a reported value as `label: value` pairs, so a pass's new figures appear without a change here. */
function flatten(label: string, value: unknown): Array<[string, string]> {
  if (value === null || value === undefined) return [];
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return [[label, String(value)]];
  if (typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => flatten(`${label} ${i + 1}`, item));
  return Object.entries(value).flatMap(([key, inner]) =>
    flatten(label ? `${label} · ${words(key)}` : words(key), inner),
  );
}

/** A marker's passes: as its report has them once it ended, else as its progress has them so far. */
function passesOf(marker: MarkerRow): PassView[] {
  const reported = (marker.report as { passes?: Array<Record<string, unknown>> } | null)?.passes ?? [];
  const views: PassView[] = reported.map((p) => ({
    pass: String(p.pass),
    done: true,
    counts: Object.fromEntries(COUNTED.map((k) => [k, Number(p[k] ?? 0)])) as PassView['counts'],
    seconds: typeof p.seconds === 'number' ? p.seconds : undefined,
    warnings: Array.isArray(p.warnings) ? p.warnings.map(String) : [],
    moreWarnings: Number(p.moreWarnings ?? 0),
    facts: Object.entries(p)
      .filter(([key]) => !SHOWN.has(key))
      .flatMap(([key, value]) => flatten(words(key), value)),
  }));
  for (const [pass, totals] of Object.entries(passProgress(marker.progress)))
    if (!views.some((v) => v.pass === pass))
      views.push({ pass, done: totals.done, counts: totals, warnings: [], moreWarnings: 0, facts: [] });
  return views;
}

const badge = (state: string, text = state) => `<span class="state ${escapeHtml(state)}">${escapeHtml(text)}</span>`;
const MARKER_STATES: Record<string, string> = { Completed: 'done', Started: 'running', Failed: 'failed' };
const when = (date: Date | null) =>
  date ? escapeHtml(date.toISOString().replace('T', ' ').slice(0, 19)) + ' UTC' : '—';

/** A pass's figures by what they are of (`readiness: ready 3, will notice 0`). */
function factGroups(facts: Array<[string, string]>): string {
  const groups = new Map<string, string[]>();
  for (const [label, value] of facts) {
    const [group, ...rest] = label.split(' · ');
    const line = `${escapeHtml(rest.join(' · '))} <strong>${escapeHtml(value)}</strong>`.trim();
    groups.set(group, [...(groups.get(group) ?? []), line]);
  }
  return [...groups].map(([group, lines]) => `${escapeHtml(group)}: ${lines.join(', ')}`).join(' · ');
}

/** A dry run's counts are what the real run would write: its headings say so. */
function passTable(passes: PassView[], dryRun: boolean): string {
  if (passes.length === 0) return '<p>No pass has reported yet.</p>';
  const rows = passes.map(
    (p) =>
      `<tr><td>${escapeHtml(p.pass)}</td><td>${p.done ? badge('done') : badge('running')}</td>${COUNTED.map(
        (k) => `<td class="n">${p.counts[k]}</td>`,
      ).join('')}<td class="n">${p.warnings.length + p.moreWarnings}</td><td class="n">${p.seconds ?? '—'}</td></tr>`,
  );
  const counted = dryRun ? ['Would create', 'Would update', 'Would skip'] : ['Created', 'Updated', 'Skipped'];
  const head = ['Pass', 'State', 'Read', ...counted, 'Warnings', 'Seconds'].map((h) => `<th>${h}</th>`);
  const details = passes
    .filter((p) => p.facts.length > 0 || p.warnings.length > 0)
    .map((p) => {
      const facts = factGroups(p.facts);
      const more = p.moreWarnings > 0 ? `<li>… and ${p.moreWarnings} more</li>` : '';
      const warnings = p.warnings.length
        ? `<details><summary>${p.warnings.length + p.moreWarnings} warning(s) of ${escapeHtml(p.pass)}</summary><ul>${p.warnings
            .map((w) => `<li>${escapeHtml(w)}</li>`)
            .join('')}${more}</ul></details>`
        : '';
      return `${facts ? `<p class="facts"><strong>${escapeHtml(p.pass)}</strong> · ${facts}</p>` : ''}${warnings}`;
    });
  return `<div class="scroll"><table class="grid"><thead><tr>${head.join('')}</tr></thead><tbody>${rows.join('')}</tbody></table></div>${details.join('')}`;
}

function markerSection(marker: MarkerRow): string {
  const report = marker.report as { error?: string; reason?: string } | null;
  const problem = report?.error ?? report?.reason;
  return `<h3 id="version-${escapeHtml(marker.version)}">Version ${escapeHtml(marker.version)} ${badge(
    MARKER_STATES[marker.state] ?? 'todo',
    marker.state,
  )} ${marker.dry_run ? badge('check', 'dry run') : ''}</h3>
<p class="facts">Started ${when(marker.started_at)} · finished ${when(marker.finished_at)}</p>
${problem ? `<p class="error">${escapeHtml(problem)}</p>` : ''}${passTable(passesOf(marker), marker.dry_run)}`;
}

function stepList(steps: CutoverStep[]): string {
  const labels = { done: 'done', running: 'in progress', todo: 'to do', check: 'check', failed: 'failed' };
  return `<ol class="steps">${steps
    .map(
      (s) =>
        `<li>${badge(s.state, labels[s.state])} ${escapeHtml(s.title)}<span class="why">${escapeHtml(s.why)}</span></li>`,
    )
    .join('')}</ol>`;
}

function lookUpTable(tallies: ReadThroughTally[]): string {
  if (tallies.length === 0) return '<p>No look-up in the source yet.</p>';
  const rows = tallies.map(
    (t) =>
      `<tr><td>${escapeHtml(t.kind)}</td><td>${escapeHtml(t.outcome)}</td><td class="n">${t.count}</td><td>${when(t.firstAt)}</td><td>${when(t.lastAt)}</td></tr>`,
  );
  return `<div class="scroll"><table class="grid"><thead><tr><th>Kind</th><th>Outcome</th><th>Look-ups</th><th>First</th><th>Last</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}

/** Clients' readiness and refresh tokens, as the latest run that reported them says. */
function readinessSection(markers: MarkerRow[]): string {
  const clients = markers
    .map((m) => ({
      m,
      pass: passesOf(m).find((p) => p.pass === 'clients' && p.facts.some(([k]) => k.startsWith('readiness'))),
    }))
    .find((x) => x.pass);
  const clientText = clients?.pass
    ? `<p class="facts">Version ${escapeHtml(clients.m.version)}: ${clients.pass.facts
        .filter(([k]) => k.startsWith('readiness'))
        .map(([k, v]) => `${escapeHtml(k.replace('readiness · ', ''))} <strong>${escapeHtml(v)}</strong>`)
        .join(' · ')}; each client that will notice is named in the clients pass's warnings.</p>`
    : '<p>No run has reported the clients yet.</p>';
  const tokens = markers.map((m) => ({ m, tally: refreshTokenTally(m) })).find((x) => x.tally);
  const reasons = Object.entries(tokens?.tally?.notCarried ?? {});
  const tokenText = tokens?.tally
    ? `<p class="facts">Version ${escapeHtml(tokens.m.version)}: <strong>${tokens.tally.carriedOver}</strong> carried over${
        reasons.length ? '; not carried over:' : '.'
      }</p>${
        reasons.length
          ? `<div class="scroll"><table class="grid"><thead><tr><th>Why not</th><th>Tokens</th></tr></thead><tbody>${reasons
              .map(([why, n]) => `<tr><td>${escapeHtml(why)}</td><td class="n">${n}</td></tr>`)
              .join('')}</tbody></table></div>`
          : ''
      }`
    : '<p>No run has reported refresh tokens yet.</p>';
  return `<h2>Clients' readiness</h2>${clientText}<h2>Refresh tokens carried over</h2>${tokenText}`;
}

/** The cutover dashboard: what is left to do, each version's passes, clients, refresh tokens and the window. */
export function cutoverDashboard({ config, db }: { config: AppConfig; db: Db }) {
  return async (_req: Request, res: Response, admin: { email: string }) => {
    const [markers, tallies, signingKeys] = await Promise.all([
      listMarkers(db),
      listReadThroughTallies(db),
      countSigningKeysByOrigin(db),
    ]);
    const migration = config.Migration;
    const now = new Date();
    const steps = cutoverSteps({ migration, markers, tallies, signingKeys, now });
    const until = migration.ReadThrough.Until;
    const window =
      until === undefined ? 'not configured' : until > now ? `open until ${when(until)}` : `closed ${when(until)}`;
    const body = `<p class="facts">Signed in as <span class="who">${escapeHtml(admin.email)}</span> · <a href="/admin/sign-out">Sign out</a> · <a href="${CUTOVER_DASHBOARD_PATH}">Refresh</a> · as of ${when(now)}</p>
<p class="facts">Configured version <strong>${escapeHtml(migration.Version)}</strong> · Enabled ${migration.Enabled ? 'yes' : 'no'} · DryRun ${migration.DryRun ? 'yes' : 'no'} · for scripts: <code>GET /admin/migration/status</code> with an admin bearer</p>
<h2>What is left to do</h2>${stepList(steps)}
<h2>Runs by version</h2>${markers.length ? markers.map(markerSection).join('') : '<p>No run has started yet.</p>'}
${readinessSection(markers)}
<h2>Read-through look-ups</h2><p class="facts">The window is ${window}.</p>${lookUpTable(tallies)}`;
    sendPage(res, 200, page('Migration cutover', body, { wide: true }));
  };
}
