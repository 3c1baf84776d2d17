import { randomInt, randomUUID } from 'node:crypto';
import type { KeyRing } from '../../../platform/security/data-protection';
import type { Db } from '../../../platform/store/database';
import { recoveryCodeHash } from '../../totp';
import { replaceRecoveryCodes } from '../../store/accounts';

const RECOVERY_CODE_COUNT = 10;
/** ASP.NET Core Identity's recovery-code alphabet: no 0/O, 1/I/L or vowels that spell words. */
const CODE_ALPHABET = '23456789BCDFGHJKMNPQRTVWXY';
/** A recovery code as ASP.NET Core Identity makes them: two groups of five, `XXXXX-XXXXX`. */
function newRecoveryCode(): string {
  const chars = Array.from({ length: 10 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

/** Ten new recovery codes (the earlier ones stop working): stored as keyed hashes, shown once. */
export async function newRecoveryCodes({ db, ring }: { db: Db; ring: KeyRing }, userId: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await replaceRecoveryCodes(
    db,
    userId,
    codes.map((code, i) => ({
      id: randomUUID(),
      label: `rc-${i + 1}`,
      hash: recoveryCodeHash(code, ring.primary.key),
    })),
  );
  return codes;
}
