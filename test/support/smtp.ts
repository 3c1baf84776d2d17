import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { eventually } from './harness';

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The links of the plain-text body, in order. */
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
