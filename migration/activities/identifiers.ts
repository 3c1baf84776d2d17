/** Ids are kept verbatim, so they must be usable as ids here: printable, no surrounding space, at most 256 characters. */
export function identifierProblem(kind: string, id: string): string | undefined {
  if (id.length === 0) return `${kind} with an empty id`;
  if (id.length > 256) return `${kind} ${id.slice(0, 40)}… has an id longer than 256 characters`;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is looked for
  if (/[\u0000-\u001f\u007f]/.test(id) || id !== id.trim())
    return `${kind} ${JSON.stringify(id)} has control characters or surrounding white space in its id`;
  return undefined;
}
