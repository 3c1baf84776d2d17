import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import type { AllowList } from '../../platform/security/callback-address';
import type { KeyRing } from '../../platform/security/data-protection';
import type { SourceReadThrough } from '../source-read-through';
import type { Db } from '../../platform/store/database';

/** What federated sign-in is built from (createFederation), and what its routes are handed. */
export interface FederationDependencies {
  db: Db;
  ring: KeyRing;
  run: WorkflowRunner;
  /** Api:PublicUrl. */
  issuer: string;
  /** Auth:AllowedInternalTargets: which internal addresses an upstream provider may have. */
  allow: AllowList;
  log?: (line: string) => void;
  /** The cutover's read-through window (Migration:ReadThrough), while it is configured. */
  readThrough?: SourceReadThrough;
}
