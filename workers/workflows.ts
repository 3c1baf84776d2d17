export {
  createUserAndProvision,
  deactivateAndDeprovision,
  deleteUserAndDeprovision,
  provisionExistingUser,
  reactivateAndProvision,
} from '../provisioning/workflows/provisioning';
export { cancelInBackground, deprovisionApps } from '../provisioning/workflows/background';
export { migrationPass, migrationRun, migrationSweep } from '../migration/workflows/migration';
export { notifySignOut } from '../sign-in/workflows/notify-sign-out';
export { signingKeyRotation } from '../sign-in/workflows/signing-key-rotation';
