export { cancelInBackground, createUserAndProvision, deleteUserAndDeprovision, deprovisionApps, provisionExistingUser } from './provisioning';
