import type { KeyRing } from '../security/data-protection';
import { protectText, unprotectText } from '../security/data-protection';
import type { KeyRingDocument } from '../security/aspnet-data-protection';
import type { Db } from './database';

/**
 * The source's Data Protection key ring as the last migration read it, each document sealed under the service's ring
 * (a source key opens every cookie and grant the source protected): the migration writes it, sign-in opens the
 * source's cookies with it without a connection to the source. A document no longer at the source stays: a key the
 * source retired still opens what it protected, and a revocation is its own document.
 */
export async function keepSourceKeyRing(db: Db, ring: KeyRing, documents: KeyRingDocument[]): Promise<void> {
  if (documents.length === 0) return;
  const copiedAt = new Date();
  await db
    .insertInto('source_key_ring')
    .values(documents.map((d) => ({ name: d.name, sealed_xml: protectText(d.xml, ring), copied_at: copiedAt })))
    .onConflict((oc) =>
      oc.column('name').doUpdateSet((eb) => ({
        sealed_xml: eb.ref('excluded.sealed_xml'),
        copied_at: eb.ref('excluded.copied_at'),
      })),
    )
    .execute();
}

/** The kept documents, opened. */
export async function readKeptSourceKeyRing(db: Db, ring: KeyRing): Promise<KeyRingDocument[]> {
  const rows = await db.selectFrom('source_key_ring').select(['name', 'sealed_xml']).orderBy('name').execute();
  return rows.map((r) => ({ name: r.name, xml: unprotectText(r.sealed_xml, ring) }));
}
