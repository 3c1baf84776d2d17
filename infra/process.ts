import { ConfigError } from '../config/load';

/** Runs an entry point: configuration errors print as one clear message, signals shut down cleanly. */
export function runMain(name: string, main: () => Promise<() => Promise<void>>): void {
  main()
    .then((shutdown) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        console.log(`${name}: ${signal} received, shutting down`);
        shutdown()
          .then(() => process.exit(0))
          .catch((error) => {
            console.error(`${name}: shutdown failed:`, error);
            process.exit(1);
          });
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    })
    .catch((error) => {
      console.error(`${name}: ${error instanceof ConfigError ? error.message : error?.stack ?? error}`);
      process.exit(1);
    });
}

export function required(value: string | undefined, what: string): string {
  if (!value) throw new ConfigError(what);
  return value;
}
