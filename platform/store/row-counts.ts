import type { DeleteResult, UpdateResult } from 'kysely';

/** Whether a delete removed a row: false answers "not found" to the caller. */
export const deletedAny = (result: DeleteResult): boolean => result.numDeletedRows > 0n;

/** Whether an update matched a row: false answers "not found" to the caller. */
export const updatedAny = (result: UpdateResult): boolean => result.numUpdatedRows > 0n;
