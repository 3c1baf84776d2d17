import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { parseKeyRing, type DataProtectionKeyRing } from '../../platform/security/aspnet-data-protection';
import { hasColumn } from './configuration-reads';
import type { SourceDatabase } from './source-schema';

/** Migration:SourceDataProtection: how the source's ASP.NET Core Data Protection is set up. */
export interface SourceDataProtectionSettings {
  /** The source's application discriminator (SetApplicationName, or by default its content root path). */
  ApplicationName?: string;
  /** A folder of key-*.xml (and revocation-*.xml) copied from the source; without it, the source's DataProtectionKeys table. */
  KeyRingPath?: string;
}

export interface SourceKeyRing {
  ring: DataProtectionKeyRing;
  /** Where it came from, for the report. */
  from: string;
}

/**
 * The source's key ring: the XML files at KeyRingPath, or else the `Xml` of the source's DataProtectionKeys table (EF
 * Core's store) when the source has one; undefined when neither is there. Read only: the source is never written.
 */
export async function loadSourceKeyRing(
  source: Kysely<SourceDatabase> | undefined,
  settings: SourceDataProtectionSettings,
): Promise<SourceKeyRing | undefined> {
  if (settings.KeyRingPath) {
    const files = (await readdir(settings.KeyRingPath)).filter((f) => f.toLowerCase().endsWith('.xml')).sort();
    const documents = await Promise.all(files.map((f) => readFile(join(settings.KeyRingPath!, f), 'utf8')));
    return { ring: parseKeyRing(documents), from: `${files.length} files at ${settings.KeyRingPath}` };
  }
  if (!source || !(await hasColumn(source, 'DataProtectionKeys', 'Xml'))) return undefined;
  const rows = await source.selectFrom('DataProtectionKeys').select('Xml').execute();
  return {
    ring: parseKeyRing(rows.flatMap((r) => (r.Xml ? [r.Xml] : []))),
    from: `${rows.length} rows of the source's DataProtectionKeys table`,
  };
}
