export {
  createUserAndProvision,
  deactivateAndDeprovision,
  deleteUserAndDeprovision,
  provisionExistingUser,
  reactivateAndProvision,
} from './provisioning';
export { cancelInBackground, deprovisionApps } from './background';
export { migrationPass, migrationRun, migrationSweep } from './migration';
