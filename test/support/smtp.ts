import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Mail } from '../../platform/email/mailer';
import { eventually } from './harness';

/** A mail as the catcher received it: what the service sent, and the links of its plain-text body, in order. */
export interface ReceivedMail extends Omit<Mail, 'kind'> {
  links: string[];
}

export interface MailCatcher {
  port: number;
  received: ReceivedMail[];
  /** The mails to `to` so far. */
  to(address: string): ReceivedMail[];
  /** Waits until `to` has received `count` mails in all; the newest. */
  next(address: string, count?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

const addressOf = (mail: ParsedMail) =>
  (Array.isArray(mail.to) ? mail.to[0] : mail.to)?.value[0]?.address?.toLowerCase() ?? '';

/** A real SMTP server on loopback (smtp-server): the service sends to it as to any mail server; tests read what came. */
export async function startMailCatcher(): Promise<MailCatcher> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          const text = mail.text ?? '';
          received.push({
            to: addressOf(mail),
            subject: mail.subject ?? '',
            text,
            html: typeof mail.html === 'string' ? mail.html : '',
            links: [...text.matchAll(/https?:\/\/\S+/g)].map((m) => m[0]),
          });
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  const to = (address: string) => received.filter((m) => m.to === address.toLowerCase());
  return {
    port,
    received,
    to,
    async next(address, count = 1) {
      return eventually(() => {
        const mails = to(address);
        if (mails.length < count) throw new Error(`${address} has ${mails.length} mails, not ${count}`);
        return mails[mails.length - 1];
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A mail catcher for a test file: started before the harness (register this first, then `useHarness(() => …)` reading
 * `catcher().port`), closed after every test of the file.
 */
export function useMailCatcher(): () => MailCatcher {
  let started: MailCatcher | undefined;
  beforeAll(async () => {
    started = await startMailCatcher();
  });
  afterAll(() => started?.close());
  return () => {
    if (!started) throw new Error('the mail catcher is used before it started');
    return started;
  };
}

/** The service's Email settings for a catcher: its SMTP port on loopback, no TLS. */
export const smtpTo = (catcher: MailCatcher) => ({ Smtp: { Host: '127.0.0.1', Port: catcher.port } });
