import { isStoreUnavailable } from '../../platform/store/errors';

/** The store's faults that say nothing about the request (answered 503, send again) against those that do. */
const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test.each([
  ['terminated by an administrator (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
  ['a connection failure (08006)', withCode('08006')],
  ['the server starting up (57P03)', withCode('57P03')],
  ['too many connections (53300)', withCode('53300')],
  ['refused', withCode('ECONNREFUSED')],
  ['ended under the query', new Error('Connection terminated unexpectedly')],
  ['no connection from the pool in time', new Error('timeout exceeded when trying to connect')],
])('unavailable: %s', (_, error) => {
  expect(isStoreUnavailable(error)).toBe(true);
});

test.each([
  ['a unique violation', withCode('23505')],
  ['a syntax error', withCode('42601')],
  ['a statement timeout (57014)', withCode('57014')],
  ['an error of the service', new Error('something else')],
  ['not an error', undefined],
])('not unavailable: %s', (_, error) => {
  expect(isStoreUnavailable(error)).toBe(false);
});
