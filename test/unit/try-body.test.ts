import { buildTryBody } from '../../provisioning/activities/provisioning-activities';
import { newUserFrom } from '../../provisioning/creation';

const user = { userId: 'u1', ...newUserFrom({ email: 'a@example.test' }), active: true };

describe('Try request body follows the spec table', () => {
  test('nulls and an empty customAttributes map are omitted', () => {
    expect(buildTryBody('tx-1', user)).toEqual({ transactionId: 'tx-1', userId: 'u1', email: 'a@example.test' });
  });

  test('present values are sent, and nothing else of the user', () => {
    const profile = { firstName: 'A', lastName: 'B', organizationId: 'o', customAttributes: { k: 'v' } };
    const body = buildTryBody('tx-2', { ...user, ...profile });
    expect(body).toEqual({ transactionId: 'tx-2', userId: 'u1', email: 'a@example.test', ...profile });
  });
});
