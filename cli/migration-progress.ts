import type { Db } from '../platform/store/database';
import { findMarker, passProgress, type PassTotals } from '../migration/store/migration-markers';
import type { MigrationReport } from '../migration/workflows/migration';

type Totals = Omit<PassTotals, 'done'>;

const BAR_WIDTH = 24;

/** A dry run's counts are what the real run would write: said so, so that nobody takes them for rows written. */
function line(pass: string, t: Totals, total?: number, dryRun = false): string {
  const bar = total
    ? `${'█'.repeat(Math.min(BAR_WIDTH, Math.round((t.read / Math.max(total, 1)) * BAR_WIDTH))).padEnd(BAR_WIDTH, '░')} `
    : '';
  const of = total ? `/${total}` : '';
  return `${pass.padEnd(15)} ${bar}read ${t.read}${of}  ${dryRun ? 'would create' : 'created'} ${t.created}  ${dryRun ? 'would update' : 'updated'} ${t.updated}  ${dryRun ? 'would skip' : 'skipped'} ${t.skipped}`;
}

/**
 * Follows the run through its marker (the same data /admin/migration/status shows): one line per pass, redrawn
 * in place on a terminal, printed once per finished pass otherwise.
 */
export function followProgress(
  db: Db,
  version: string,
  totals: Record<string, number>,
  dryRun: boolean,
  out: NodeJS.WriteStream = process.stdout,
): () => void {
  const printed = new Set<string>();
  let current: string | undefined;
  const tick = async () => {
    const marker = await findMarker(db, version).catch(() => undefined);
    if (!marker) return;
    const passes = passProgress(marker.progress);
    // Finished passes get a line of their own; on a terminal the passes still under way share one redrawn line.
    for (const [pass, t] of Object.entries(passes)) {
      if (printed.has(pass) || !t.done) continue;
      out.write(`${out.isTTY ? '\r\x1b[K' : ''}${line(pass, t, totals[pass], dryRun)}\n`);
      printed.add(pass);
    }
    const running = Object.entries(passes).filter(([, t]) => !t.done);
    if (out.isTTY && running.length > 0) {
      out.write(`\r\x1b[K${running.map(([pass, t]) => line(pass, t, totals[pass], dryRun)).join(' | ')}`);
      current = running[0][0];
    }
  };
  const timer = setInterval(() => void tick(), 500);
  return () => {
    clearInterval(timer);
    if (current) out.write('\n');
  };
}

export function printReport(report: MigrationReport, out: NodeJS.WriteStream = process.stdout): void {
  out.write(
    `\nmigration ${report.version}${report.dryRun ? ' (dry run)' : ''}: ${report.state}${report.reason ? ` — ${report.reason}` : ''}${report.error ? ` — ${report.error}` : ''}\n`,
  );
  if (report.validation) {
    const missing = report.validation.inventory.filter((t) => !t.found || t.missingColumns.length > 0);
    out.write(
      `inventory: ${report.validation.inventory.length - missing.length}/${report.validation.inventory.length} tables as expected\n`,
    );
    for (const t of missing)
      out.write(`  ${t.table}: ${t.found ? `missing columns ${t.missingColumns.join(', ')}` : 'table not found'}\n`);
    out.write(`duplicate e-mails: ${report.validation.duplicateEmailCount}\n`);
    for (const d of report.validation.duplicateEmails.slice(0, 10)) out.write(`  ${d.email} (${d.count} users)\n`);
  }
  for (const p of report.passes) {
    out.write(`${line(p.pass, p, undefined, report.dryRun)}\n`);
    if (p.readiness)
      out.write(`  clients: ${p.readiness.ready} ready, ${p.readiness.willNotice} will notice the cutover\n`);
    if (p.refreshTokens) {
      const verb = report.dryRun ? 'would carry over' : 'carried over';
      out.write(`  refresh tokens that ${verb}: ${p.refreshTokens.carriedOver}\n`);
      for (const [reason, count] of Object.entries(p.refreshTokens.notCarried))
        out.write(`  not carried over, ${reason}: ${count}\n`);
    }
    if (p.signingKeys) {
      const k = p.signingKeys;
      out.write(
        `  signing keys ${report.dryRun ? 'that would be imported' : 'imported'}: ${k.imported}, already here: ${k.alreadyStored}, retired: ${k.retired}\n`,
      );
      for (const [reason, count] of Object.entries(k.notImported)) out.write(`  not imported, ${reason}: ${count}\n`);
    }
    for (const w of p.warnings.slice(0, 10)) out.write(`  warning: ${w}\n`);
    const more = p.warnings.length - Math.min(10, p.warnings.length) + p.moreWarnings;
    if (more > 0) out.write(`  … and ${more} more warnings (GET /admin/migration/status has the first 100)\n`);
  }
}
