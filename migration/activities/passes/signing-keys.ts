import { loadSourceKeyRing } from '../../source/data-protection-keys';
import {
  NOT_IMPORTED,
  openSerializedKey,
  readKeyFolder,
  readSigningKeyRows,
  type NotImportedReason,
  type SerializedKey,
} from '../../source/source-signing-keys';
import { storedSigningKeyIds, storeSigningKey, type SigningJwk } from '../../../platform/store/signing-keys';
import { emptyPage, type PageResult, type PassContext, type SigningKeyTally, type Pass } from '../types';

/** A source key with where it was found, for the report (a kid is no secret: every JWKS publishes it). */
type Found = { key: SerializedKey; from: string };

/** The Keys table's signing keys and the key folder's files; a file that is not a key is counted and named. */
async function findSourceKeys(ctx: PassContext, page: PageResult, tally: SigningKeyTally): Promise<Found[]> {
  const rows = await readSigningKeyRows(ctx.source);
  const path = ctx.sourceSigningKeys?.KeyPath;
  if (!rows && !path)
    page.warnings.push(
      "the source has no Keys table and Migration:SourceSigningKeys:KeyPath is not set: no signing key was read (a key only in appsettings is imported with 'import-signing-key')",
    );
  const found: Found[] = (rows ?? []).map((key) => ({ key, from: 'Keys table' }));
  if (path) {
    const files = await readKeyFolder(path).catch((error: Error) => {
      page.warnings.push(`the key folder ${path} could not be read: ${error.message}`);
      return [];
    });
    for (const file of files) {
      if ('key' in file) found.push({ key: file.key, from: file.file });
      else {
        notImported(tally, NOT_IMPORTED.unreadable);
        page.warnings.push(`${file.file}: ${file.problem}`);
      }
    }
    page.read += files.length;
  }
  page.read += rows?.length ?? 0;
  return found;
}

const notImported = (t: SigningKeyTally, reason: NotImportedReason) =>
  (t.notImported[reason] = (t.notImported[reason] ?? 0) + 1);

/** The source's Data Protection key ring, read only when a key is protected; its problems are warnings. */
async function sourceKeyRing(ctx: PassContext, page: PageResult, found: Found[]) {
  if (!found.some((f) => f.key.DataProtected)) return undefined;
  const keyRing = await loadSourceKeyRing(ctx.source, ctx.sourceDataProtection ?? {}).catch((error: Error) => {
    page.warnings.push(`the source's Data Protection key ring could not be read: ${error.message}`);
    return undefined;
  });
  return keyRing?.ring;
}

/**
 * Opens each key; those that can sign are stored (or, in a dry run, counted as they would be) under their own kid
 * and creation time, sealed under the service's ring. The store is read in a dry run too, so that it reports the
 * same counts as the run.
 */
async function importKeys(ctx: PassContext, page: PageResult, tally: SigningKeyTally, found: Found[]) {
  const protection = {
    ring: await sourceKeyRing(ctx, page, found),
    applicationName: ctx.sourceDataProtection!.ApplicationName!,
  };
  const now = new Date();
  const importable: Array<{ jwk: SigningJwk; createdAt: Date }> = [];
  for (const { key, from } of found) {
    const opened = openSerializedKey(key, protection, now, ctx.options.keyManagement!);
    if (opened.opened) {
      if (ctx.dataProtection) importable.push(opened);
      else notImported(tally, NOT_IMPORTED.noServiceRing);
    } else if (opened.retired) tally.retired++;
    else {
      notImported(tally, opened.reason);
      page.warnings.push(`signing key ${key.Id} (${from}) was not imported: ${opened.reason}`);
    }
  }
  const stored = await storedSigningKeyIds(ctx.target, [...new Set(importable.map((k) => k.jwk.kid))]);
  for (const { jwk, createdAt } of importable) {
    const isNew =
      !stored.has(jwk.kid) &&
      (ctx.options.dryRun ||
        (await storeSigningKey(ctx.target, ctx.dataProtection!, jwk, { origin: 'migrated', createdAt })));
    stored.add(jwk.kid);
    if (isNew) tally.imported++;
    else tally.alreadyStored++;
  }
  // In a dry run, the keys it would import: the real run's count.
  page.created = tally.imported;
  page.skipped = page.read - page.created;
}

/**
 * The source IdentityServer's signing keys (Migration:MigrateSigningKeys, where SourceDataProtection:ApplicationName
 * is set), so tokens it signed still verify here and the service goes on signing with its current key: the rows of
 * its `Keys` table and, with Migration:SourceSigningKeys:KeyPath, the files of its FileSystemKeyStore. One page: a
 * source keeps a handful of keys (a few per algorithm; KeyManager deletes retired ones). No key material leaves the
 * activity: the page carries counts, kids and reasons only.
 */
export const signingKeysPass: Pass = async (ctx) => {
  const page = emptyPage();
  if (!ctx.options.migrateSigningKeys || !ctx.options.keyManagement || !ctx.sourceDataProtection?.ApplicationName) {
    page.warnings.push(
      "signing keys were not migrated (Migration:MigrateSigningKeys is false, or Migration:SourceDataProtection:ApplicationName is not set): tokens the source signed will not verify here unless its keys are imported with 'import-signing-key'",
    );
    return page;
  }
  const tally: SigningKeyTally = (page.signingKeys = { imported: 0, alreadyStored: 0, retired: 0, notImported: {} });
  const found = await findSourceKeys(ctx, page, tally);
  await importKeys(ctx, page, tally, found);
  return page;
};
