export {
  cancelInBackground,
  createUserAndProvision,
  deactivateAndDeprovision,
  deleteUserAndDeprovision,
  deprovisionApps,
  provisionExistingUser,
  reactivateAndProvision,
} from './provisioning';
export { migrationPass, migrationRun, migrationSweep } from './migration';
