import { buildTryBody } from '../../activities/provisioning';

const user = {
  userId: 'u1',
  email: 'a@example.test',
  firstName: null,
  lastName: null,
  organizationId: null,
  customAttributes: {},
  active: true,
};

describe('Try request body follows the spec table', () => {
  test('nulls and an empty customAttributes map are omitted', () => {
    expect(buildTryBody('tx-1', user)).toEqual({ transactionId: 'tx-1', userId: 'u1', email: 'a@example.test' });
  });

  test('present values are sent, and nothing else of the user', () => {
    const body = buildTryBody('tx-2', {
      ...user,
      firstName: 'A',
      lastName: 'B',
      organizationId: 'o',
      customAttributes: { k: 'v' },
    });
    expect(body).toEqual({
      transactionId: 'tx-2',
      userId: 'u1',
      email: 'a@example.test',
      firstName: 'A',
      lastName: 'B',
      organizationId: 'o',
      customAttributes: { k: 'v' },
    });
  });
});
