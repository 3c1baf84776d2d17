import pino, { type DestinationStream, type Logger } from 'pino';
import { build as prettyStream } from 'pino-pretty';

export type { Logger } from 'pino';

/**
 * Fields that may carry a secret, wherever they sit in a logged object (top level, or one or two levels down):
 * credentials in headers, app keys, passwords and their hashes, tokens, client secrets, connection strings.
 */
const SECRET_FIELDS = [
  'authorization',
  'cookie',
  'set-cookie',
  'ApiKey',
  'apiKey',
  'api_key',
  'password',
  'Password',
  'passwordHash',
  'password_hash',
  'PasswordHash',
  'secret',
  'client_secret',
  'clientSecret',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'code',
  'ConnectionString',
  'connectionString',
  'Key',
  'key',
];

export const REDACTED_PATHS = SECRET_FIELDS.flatMap((field) => {
  const member = /^\w+$/.test(field) ? `.${field}` : `["${field}"]`;
  return [/^\w+$/.test(field) ? field : member, `*${member}`, `*.*${member}`];
});

export interface LoggerOptions {
  level?: string;
  /** Readable lines instead of JSON: the default when standard output is a terminal. */
  pretty?: boolean;
  /** Where lines go; standard output by default. Tests pass a stream they read. */
  destination?: DestinationStream;
}

/**
 * Standard output, written asynchronously: lines queue in memory while one write is under way and go out together,
 * instead of one blocking write per line on the request's path (the access line of every request). pino writes what
 * is still queued synchronously when the process exits (its on-exit hook for asynchronous destinations), but not the
 * chunk a write under way holds: sonic-boom's flushSync skips it, and its flush(cb) calls back at once when no
 * minLength is set (sonic-boom 4, index.js `flush` and `flushSync`). So `written` tells when the last line given to
 * it is out, from the stream's own `drain` (emitted once nothing is queued or being written), and a clean stop waits
 * for that (flushLogs) before it exits.
 */
function asynchronousStdout(): { stream: DestinationStream; written: () => Promise<void> } {
  const stream = pino.destination({ dest: 1, sync: false });
  let unwritten = false;
  const write = stream.write.bind(stream);
  stream.write = (line: string) => {
    unwritten = true;
    return write(line);
  };
  stream.on('drain', () => (unwritten = false));
  return {
    stream,
    written: () => (unwritten ? new Promise((resolve) => stream.once('drain', () => resolve())) : Promise.resolve()),
  };
}

const writtenAlready = () => Promise.resolve();

/**
 * A logger with the service's redaction, and what tells when every line logged through it is written (at once for a
 * destination it was given and for the synchronous terminal lines).
 */
function loggerWithWritten({ level = 'info', pretty = false, destination }: LoggerOptions) {
  const options = {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[Redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (destination) return { logger: pino(options, destination), written: writtenAlready };
  if (pretty)
    return {
      logger: pino(options, prettyStream({ colorize: true, sync: true, ignore: 'pid,hostname' })),
      written: writtenAlready,
    };
  const stdout = asynchronousStdout();
  return { logger: pino(options, stdout.stream), written: stdout.written };
}

/** A logger with the service's redaction: JSON lines for machines, readable lines in a terminal. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return loggerWithWritten(options).logger;
}

/**
 * The process's logger. LOG_LEVEL sets its level (info by default); LOG_FORMAT=json or pretty overrides the choice
 * made from whether standard output is a terminal.
 */
const processLog = loggerWithWritten({
  level: process.env.LOG_LEVEL ?? 'info',
  pretty: process.env.LOG_FORMAT ? process.env.LOG_FORMAT === 'pretty' : process.stdout.isTTY === true,
});
export const logger: Logger = processLog.logger;

/**
 * Resolves once every line logged so far is written (at most `timeoutMs` later: a stalled reader of standard output
 * must not hold up a stop). A clean stop calls it before process.exit.
 */
export function flushLogs(timeoutMs = 2000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    void processLog.written().then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
