import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isIP } from 'node:net';
import nodemailer from 'nodemailer';
import type { AppConfig } from '../config/config-schema';
import { logger } from '../observability/logger';
import { mailsSent } from '../observability/metrics';
import { isLoopbackHost } from '../security/callback-address';

/** One mail: the recipient, a subject, and the same message as plain text and as HTML. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** What the mail is for, in metrics and log lines (password-reset, email-confirmation, ...). */
  kind: string;
}

export interface Mailer {
  /** Sends (or writes to the outbox); a failure is logged and counted, never thrown: no page waits on the mail. */
  send(mail: Mail): Promise<boolean>;
  /** Where mails go, for the start-up line: `smtp://host:port` or the outbox folder. */
  readonly destination: string;
  close(): void;
}

/**
 * The service's mail through nodemailer: SMTP when Email:Smtp:Host is set (Email:Smtp:User and Password, when set,
 * stay out of every log line), else one .eml file a mail in Email:OutboxPath, which a developer opens in any mail
 * program. Log lines name the kind and the file, never the recipient's link: its token is a credential.
 */
/**
 * Hands a mail to `deliver` and records the outcome: a count by kind and outcome, and a log line naming the kind and
 * where it went (`deliver` says that: the server, or the outbox file), never the recipient's link.
 */
async function sent(
  mail: Mail,
  destination: string,
  outcome: 'sent' | 'outbox',
  deliver: () => Promise<{ said: string; file?: string }>,
) {
  try {
    const { said, file } = await deliver();
    mailsSent.inc({ kind: mail.kind, outcome });
    logger.info({ mail: mail.kind, file }, `mail: ${mail.kind} ${said}`);
    return true;
  } catch (error) {
    mailsSent.inc({ kind: mail.kind, outcome: 'failed' });
    logger.error({ mail: mail.kind, err: error }, `mail: ${mail.kind} could not be delivered to ${destination}`);
    return false;
  }
}

type SmtpSettings = AppConfig['Email']['Smtp'] & { Host: string };

export interface MailerOptions {
  /** How the SMTP host's name becomes an address (tests answer without DNS); nodemailer resolves it when absent. */
  lookup?: (host: string) => Promise<string>;
}

/**
 * Whether mail may go only over TLS (Email:Smtp:RequireTls): as configured, else required unless the host is
 * this machine by its spelling. Without it nodemailer sends in plain text whenever the server does not offer
 * STARTTLS, and a man in the middle only has to strip that one line of the server's greeting.
 */
export function smtpNeedsTls(smtp: Pick<SmtpSettings, 'Host' | 'RequireTls'>): boolean {
  return smtp.RequireTls ?? !isLoopbackHost(smtp.Host);
}

function smtpMailer(
  smtp: SmtpSettings,
  message: (mail: Mail) => nodemailer.SendMailOptions,
  lookup: MailerOptions['lookup'],
): Mailer {
  const requireTLS = !smtp.Secure && smtpNeedsTls(smtp);
  const transportTo = (host: string) =>
    nodemailer.createTransport({
      host,
      // The certificate is checked against the configured name, whatever address it resolved to.
      ...(isIP(smtp.Host) === 0 && { tls: { servername: smtp.Host } }),
      port: smtp.Port,
      secure: smtp.Secure,
      requireTLS,
      auth: smtp.User ? { user: smtp.User, pass: smtp.Password } : undefined,
      // A mail server that does not answer must not hold a request's work for minutes.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  const shared = lookup && isIP(smtp.Host) === 0 ? undefined : transportTo(smtp.Host);
  const destination = `smtp://${smtp.Host}:${smtp.Port}${requireTLS ? ' (TLS required)' : ''}`;
  return {
    destination,
    send: (mail) =>
      sent(mail, destination, 'sent', async () => {
        const transport = shared ?? transportTo(await lookup!(smtp.Host));
        try {
          await transport.sendMail(message(mail));
        } finally {
          if (!shared) transport.close();
        }
        return { said: `sent through ${destination}` };
      }),
    close: () => shared?.close(),
  };
}

/**
 * The service's mail through nodemailer: SMTP when Email:Smtp:Host is set (Email:Smtp:User and Password, when set,
 * stay out of every log line), else one .eml file a mail in Email:OutboxPath, which a developer opens in any mail
 * program.
 */
export function createMailer(config: AppConfig, options: MailerOptions = {}): Mailer {
  const { Smtp, From, OutboxPath } = config.Email;
  const message = (mail: Mail) => ({
    from: From,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
  });
  if (Smtp.Host) return smtpMailer(Smtp as SmtpSettings, message, options.lookup);
  const folder = resolve(OutboxPath);
  const writer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    destination: folder,
    send: (mail) =>
      sent(mail, folder, 'outbox', async () => {
        const written = await writer.sendMail(message(mail));
        await mkdir(folder, { recursive: true });
        const stamp = new Date().toISOString().replace(/[:.]/g, '-');
        const file = join(folder, `${stamp}-${mail.kind}-${randomUUID().slice(0, 8)}.eml`);
        // Written under a name no reader looks for, then renamed: whoever watches the folder (a developer's mail
        // client, a test) never opens a mail half written.
        await writeFile(`${file}.part`, written.message as Buffer, { mode: 0o600 });
        await rename(`${file}.part`, file);
        return { said: `written to ${file} (no Email:Smtp:Host set)`, file };
      }),
    close: () => writer.close(),
  };
}
