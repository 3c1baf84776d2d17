/**
 * What PostgreSQL cannot store in a text or jsonb value: a NUL character (text refuses it outright) and a lone UTF-16
 * surrogate (a JavaScript string may hold one; encoded for the wire it becomes U+FFFD in text and is refused in
 * jsonb, where JSON.stringify writes it as `\ud800`). A value with either is refused where it enters the service.
 */
export type TextProblem = 'nul' | 'lone-surrogate';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The text with what the store cannot hold taken out: NUL removed, a lone surrogate replaced by U+FFFD. */
export const storableText = (text: string) =>
  text.replace(/\0/g, '').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\ufffd');

export function textProblem(text: string): TextProblem | undefined {
  if (text.includes('\0')) return 'nul';
  if (LONE_SURROGATE.test(text)) return 'lone-surrogate';
  return undefined;
}

export const TEXT_PROBLEM_MESSAGES: Record<TextProblem, string> = {
  nul: 'must not contain NUL characters',
  'lone-surrogate': 'must be well-formed Unicode (a lone UTF-16 surrogate such as \\ud800 cannot be stored)',
};

/** The message for a value that cannot be stored, or undefined when it can. */
export const textProblemMessage = (text: string): string | undefined => {
  const problem = textProblem(text);
  return problem && TEXT_PROBLEM_MESSAGES[problem];
};

/** A printable form of a field name that may itself hold what it names (a NUL written as \u0000). */
export const printableName = (name: string) =>
  name.replace(/\0/g, '\\u0000').replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/**
 * Whether a text holds a control character (C0, DEL or C1: ESC, CR, LF, tab…), which reaches a log or a terminal as
 * it is, and has no place in a name or a URL.
 */
export const hasControlCharacter = (text: string) =>
  [...text].some((c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 || (code >= 0x7f && code <= 0x9f);
  });
