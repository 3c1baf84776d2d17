/** A check of a federated sign-in that failed: the page names it, the log names it with the provider. */
export class FederationCheckError extends Error {
  constructor(
    message: string,
    /** The provider the answer came from, once known. */
    readonly providerId?: string,
  ) {
    super(message);
  }
}
