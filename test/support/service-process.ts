import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface ServiceProcess {
  child: ChildProcess;
  /** What it printed so far, stdout and stderr together. */
  output(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  stop: () => Promise<void>;
}

const ROOT = join(__dirname, '..', '..');

/**
 * Runs one of the service's entry points in a process of its own, as `npm run …` does, with no appsettings.json
 * of the repository's (an empty file of its own) and the given environment. Tests that could poison the process they
 * run in (prototype pollution), or that need a process to fail at start, use this instead of the in-process harness.
 */
export function spawnService(
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  args: string[] = [],
  /**
   * `none`: a compiled entry point, run by plain node as the image runs it. `ownGroup`: a process group of its own
   * (its pid is the group's id), so a test can signal the whole group as a terminal's Ctrl-C does.
   */
  { loader = 'tsx', ownGroup = false }: { loader?: 'tsx' | 'none'; ownGroup?: boolean } = {},
): ServiceProcess {
  const settings = join(mkdtempSync(join(tmpdir(), 'ips-settings-')), 'appsettings.json');
  writeFileSync(settings, '{}');
  const imports = loader === 'tsx' ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...imports, resolve(ROOT, entry), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', APPSETTINGS: settings, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: ownGroup,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'exit' can come before the last of the output has been read from the pipes (a process that writes its last log
  // lines just before it exits): wait for both pipes to end too, at most a moment, since a grandchild that inherited
  // them may keep them open.
  const ended = (stream: NodeJS.ReadableStream) => new Promise<void>((done) => stream.once('end', () => done()));
  const outputEnded = Promise.all([ended(child.stdout), ended(child.stderr)]);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      const timer = setTimeout(() => resolve(code), 2_000);
      void outputEnded.then(() => {
        clearTimeout(timer);
        resolve(code);
      });
    }),
  );
  return {
    child,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits until the process prints a line matching `pattern` and returns the match; fails when it exits first. */
export async function waitForOutput(
  service: ServiceProcess,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = service.output().match(pattern);
    if (match) return match;
    if (service.child.exitCode !== null)
      throw new Error(`process exited with ${service.child.exitCode} before printing ${pattern}:\n${service.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${service.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
