import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { bearerToken } from '../../platform/http/bearer';
import { ConfigError, loadConfig } from '../../platform/config/load';
import { findJsonProblem, forbiddenPathSegment, safeStringMap } from '../../platform/security/object-keys';

describe('names that reach a prototype', () => {
  test.each([
    ['__proto__.authorization', '__proto__'],
    ['constructor.prototype.x', 'constructor'],
    ['name.__proto__.x', '__proto__'],
    ['emails[type eq "work"].PROTOTYPE', 'PROTOTYPE'],
    ['urn:ietf:params:scim:schemas:core:2.0:User:__proto__', '__proto__'],
  ])('%s names %s', (path, found) => {
    expect(forbiddenPathSegment(path)).toBe(found);
  });

  test.each([
    'name.givenName',
    'emails[value eq "__proto__"]',
    'userName eq "constructor"',
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department',
  ])('%s names none', (path) => {
    expect(forbiddenPathSegment(path)).toBeUndefined();
  });

  test('a JSON body is walked for prototype keys and NUL characters, naming the field', () => {
    expect(findJsonProblem(JSON.parse('{"a":{"b":[{"__proto__":{}}]}}'))).toEqual({
      path: 'a.b[0].__proto__',
      problem: 'forbidden-key',
    });
    expect(findJsonProblem({ a: ['ok', 'n\0'] })).toEqual({ path: 'a[1]', problem: 'nul' });
    expect(findJsonProblem({ a: 'fine', b: { c: 1 } })).toBeUndefined();
  });

  test('maps from outside lose prototype keys, each reported', () => {
    const dropped: string[] = [];
    const copy = safeStringMap(JSON.parse('{"__proto__":"x","constructor":"y","team":"t"}'), (key) =>
      dropped.push(key),
    );
    expect(copy).toEqual({ team: 't' });
    expect(Object.hasOwn(copy, 'constructor')).toBe(false);
    expect(dropped).toEqual(['__proto__', 'constructor']);
  });

  test('a configuration key through a prototype name stops start-up', () => {
    expect(() => loadConfig({ base: {}, env: { Auth____proto____polluted: 'x' }, argv: [] })).not.toThrow();
    expect(() => loadConfig({ base: {}, env: {}, argv: ['--Auth:__proto__:polluted', 'yes'] })).toThrow(ConfigError);
    expect(() => loadConfig({ base: {}, env: { Api__constructor__prototype__polluted: 'yes' }, argv: [] })).toThrow(
      /"constructor" is not a configuration name/,
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(() =>
      loadConfig({
        base: { ProvisioningApps: { constructor: { CallbackUrl: 'https://a.example.com', ApiKey: 'k' } } },
        env: {},
        argv: [],
      }),
    ).toThrow(/ProvisioningApps:constructor/);
  });

  test('the bearer token is read from the request itself, never from its prototype chain', () => {
    const req = new IncomingMessage(new Socket());
    req.headers = Object.assign(Object.create({ authorization: 'Bearer inherited' }), { host: 'x' });
    expect(bearerToken(req)).toBeUndefined();
    req.headers = { authorization: 'Bearer  own-token ' };
    expect(bearerToken(req)).toBe('own-token');
    req.headers = { authorization: 'Basic abc' };
    expect(bearerToken(req)).toBeUndefined();
  });
});
