import type { PasswordPolicy } from '../platform/config/config-schema';
import type { WorkflowRunner } from '../provisioning/workflow-runner';
import type { Db } from '../platform/store/database';

/** What the SCIM routers are built from (the composition root hands it over once). */
export interface ScimDependencies {
  db: Db;
  run: WorkflowRunner;
  passwordPolicy: PasswordPolicy;
  scimUrl: string;
  /** The public page that documents the service's SCIM rules (the ServiceProviderConfig's documentationUri). */
  documentationUrl: string;
  /** Api:PublicUrl, the issuer of the sessions a deactivation ends (back-channel logout tokens name it). */
  issuer: string;
}
