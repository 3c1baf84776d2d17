import { parseConfig } from '../../platform/config/load';
import { createMailer, smtpNeedsTls, type Mail } from '../../platform/email/mailer';
import { useMailCatcher } from '../support/smtp';

// Issue 37 item 16: with Email:Smtp:Secure false, a server that does not offer STARTTLS (or a man in the middle who
// strips it from the greeting) got every mail, reset links included, in plain text.
const catcher = useMailCatcher();
/** The mail server's name as configured; this test's resolver answers it with the catcher's loopback address. */
const MAIL_HOST = 'mail.example.test';
const resolved: string[] = [];
const lookup = (host: string) => {
  resolved.push(host);
  if (host !== MAIL_HOST) throw new Error(`unexpected lookup of ${host}`);
  return Promise.resolve('127.0.0.1');
};

const mail = (to: string): Mail => ({
  to,
  subject: 'Reset',
  text: 'https://id.example/reset?token=t',
  html: '<p>t</p>',
  kind: 'test',
});

function mailerFor(smtp: Record<string, unknown>) {
  return createMailer(parseConfig({ Email: { Smtp: { Port: catcher().port, ...smtp } } }), { lookup });
}

test('TLS is required unless the host is this machine by its spelling or RequireTls is false', () => {
  for (const host of ['mail.example.test', '192.0.2.25', 'smtp.localhost.example'])
    expect(smtpNeedsTls({ Host: host, RequireTls: undefined })).toBe(true);
  for (const host of ['127.0.0.1', '127.3.2.1', 'localhost', 'mail.localhost', '::1', '[::1]'])
    expect(smtpNeedsTls({ Host: host, RequireTls: undefined })).toBe(false);
  expect(smtpNeedsTls({ Host: 'mail.example.test', RequireTls: false })).toBe(false);
  expect(smtpNeedsTls({ Host: '127.0.0.1', RequireTls: true })).toBe(true);
  expect(parseConfig({ Email: { Smtp: { RequireTls: 'false' } } }).Email.Smtp.RequireTls).toBe(false);
});

test('a server without STARTTLS gets no mail when the configured host is not loopback', async () => {
  const mailer = mailerFor({ Host: MAIL_HOST });
  try {
    expect(mailer.destination).toContain('TLS required');
    expect(await mailer.send(mail('refused@example.test'))).toBe(false);
    expect(resolved).toContain(MAIL_HOST);
    expect(catcher().to('refused@example.test')).toEqual([]);
  } finally {
    mailer.close();
  }
});

test('RequireTls false sends in plain text to such a server; so does a loopback host', async () => {
  const explicit = mailerFor({ Host: MAIL_HOST, RequireTls: 'false' });
  const loopback = mailerFor({ Host: '127.0.0.1' });
  try {
    expect(await explicit.send(mail('plain@example.test'))).toBe(true);
    expect(await loopback.send(mail('loopback@example.test'))).toBe(true);
    expect(catcher().to('plain@example.test')).toHaveLength(1);
    expect(catcher().to('loopback@example.test')).toHaveLength(1);
  } finally {
    explicit.close();
    loopback.close();
  }
});
