import type { Kysely } from 'kysely';
import {
  parseKeyRing,
  readKeyRingFolder,
  type DataProtectionKeyRing,
  type KeyRingDocument,
} from '../../platform/security/aspnet-data-protection';
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
 * The source's key ring documents: the XML files at KeyRingPath, or else the `Xml` of the source's DataProtectionKeys
 * table (EF Core's store) when the source has one; undefined when neither is there. Read only: the source is never
 * written.
 */
export async function readSourceKeyRingDocuments(
  source: Kysely<SourceDatabase> | undefined,
  settings: SourceDataProtectionSettings,
): Promise<{ documents: KeyRingDocument[]; from: string } | undefined> {
  if (settings.KeyRingPath) {
    const documents = await readKeyRingFolder(settings.KeyRingPath);
    return { documents, from: `${documents.length} files at ${settings.KeyRingPath}` };
  }
  if (!source || !(await hasColumn(source, 'DataProtectionKeys', 'Xml'))) return undefined;
  const rows = await source.selectFrom('DataProtectionKeys').select(['Id', 'Xml']).execute();
  return {
    documents: rows.flatMap((r) => (r.Xml ? [{ name: `DataProtectionKeys-${r.Id}`, xml: r.Xml }] : [])),
    from: `${rows.length} rows of the source's DataProtectionKeys table`,
  };
}

/** The source's key ring (readSourceKeyRingDocuments, parsed). */
export async function loadSourceKeyRing(
  source: Kysely<SourceDatabase> | undefined,
  settings: SourceDataProtectionSettings,
): Promise<SourceKeyRing | undefined> {
  const read = await readSourceKeyRingDocuments(source, settings);
  return read && { ring: parseKeyRing(read.documents.map((d) => d.xml)), from: read.from };
}
