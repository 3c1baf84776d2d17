/**
 * Whether this process is stopping on request (a signal taken by composition/process.ts). Ctrl-C reaches the whole
 * process group, the embedded PostgreSQL included, which ends its connections at once: while stopping, such losses
 * are expected and not worth a warning.
 */
let stopping = false;

export const markShuttingDown = (): void => {
  stopping = true;
};

export const shuttingDown = (): boolean => stopping;
