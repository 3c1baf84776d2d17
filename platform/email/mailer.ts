import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import nodemailer from 'nodemailer';
import type { AppConfig } from '../config/schema';
import { logger } from '../observability/logger';
import { mailsSent } from '../observability/metrics';

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
export function createMailer(config: AppConfig): Mailer {
  const { Smtp, From, OutboxPath } = config.Email;
  if (Smtp.Host) {
    const transport = nodemailer.createTransport({
      host: Smtp.Host,
      port: Smtp.Port,
      secure: Smtp.Secure,
      auth: Smtp.User ? { user: Smtp.User, pass: Smtp.Password } : undefined,
      // A mail server that does not answer must not hold a request's work for minutes.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
    const destination = `smtp://${Smtp.Host}:${Smtp.Port}`;
    return {
      destination,
      async send(mail) {
        try {
          await transport.sendMail({
            from: From,
            to: mail.to,
            subject: mail.subject,
            text: mail.text,
            html: mail.html,
          });
          mailsSent.inc({ kind: mail.kind, outcome: 'sent' });
          logger.info({ mail: mail.kind }, `mail: ${mail.kind} sent through ${destination}`);
          return true;
        } catch (error) {
          mailsSent.inc({ kind: mail.kind, outcome: 'failed' });
          logger.error({ mail: mail.kind, err: error }, `mail: ${mail.kind} could not be sent through ${destination}`);
          return false;
        }
      },
      close: () => transport.close(),
    };
  }
  const folder = resolve(OutboxPath);
  const writer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    destination: folder,
    async send(mail) {
      try {
        const { message } = await writer.sendMail({
          from: From,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
        });
        await mkdir(folder, { recursive: true });
        const file = join(
          folder,
          `${new Date().toISOString().replace(/[:.]/g, '-')}-${mail.kind}-${randomUUID().slice(0, 8)}.eml`,
        );
        await writeFile(file, message as Buffer, { mode: 0o600 });
        mailsSent.inc({ kind: mail.kind, outcome: 'outbox' });
        logger.info({ mail: mail.kind, file }, `mail: no Email:Smtp:Host set; ${mail.kind} written to ${file}`);
        return true;
      } catch (error) {
        mailsSent.inc({ kind: mail.kind, outcome: 'failed' });
        logger.error({ mail: mail.kind, err: error }, `mail: ${mail.kind} could not be written to ${folder}`);
        return false;
      }
    },
    close: () => writer.close(),
  };
}
