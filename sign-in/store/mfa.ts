import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';

export function findTotpCredential(db: Db, userId: string) {
  return db
    .selectFrom('mfa_credentials')
    .select(['id', 'secret', 'last_used_step'])
    .where('user_id', '=', userId)
    .where('kind', '=', 'totp')
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** Records the step of an accepted code, unless a concurrent sign-in used this step or a later one first. */
export async function useTotpStep(db: Db, credentialId: string, step: number): Promise<boolean> {
  const row = await db
    .updateTable('mfa_credentials')
    .set({ last_used_step: step })
    .where('id', '=', credentialId)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', sql<string>`${step}`)]))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Consumes the recovery code whose keyed hash is one of `hashes` (one per data-protection key): true once, never twice. */
export async function consumeRecoveryCode(db: Db, userId: string, hashes: string[]): Promise<boolean> {
  const row = await db
    .deleteFrom('mfa_credentials')
    .where('user_id', '=', userId)
    .where('kind', '=', 'recovery-code')
    .where('secret', 'in', hashes)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** A TOTP credential enrolled at /account/mfa; the user's two-step verification is switched on with it. */
/** A confirmed enrolment: the credential (its confirming code's step counts as used) and two-step verification on. */
export async function enrolTotp(
  db: Db,
  id: string,
  userId: string,
  sealedSecret: string,
  confirmedStep: number,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('mfa_credentials')
      .values({
        id,
        user_id: userId,
        kind: 'totp',
        label: 'enrolled-totp',
        secret: sealedSecret,
        last_used_step: confirmedStep,
      })
      .execute();
    await trx.updateTable('users').set({ two_factor_enabled: true }).where('id', '=', userId).execute();
  });
}
