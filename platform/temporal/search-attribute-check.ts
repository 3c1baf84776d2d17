import { temporal } from '@temporalio/proto';
import { ConfigError } from '../config/load';
import { SEARCH_ATTRIBUTES } from './search-attributes';

interface OperatorConnection {
  operatorService: {
    listSearchAttributes(request: {
      namespace: string;
    }): Promise<{ customAttributes?: Record<string, unknown> | null }>;
    addSearchAttributes(request: {
      namespace: string;
      searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType>;
    }): Promise<unknown>;
  };
}

const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

/**
 * Workflows set the service's search attributes (UserId, ProvisioningTrigger, ProvisioningOutcome); a cluster without
 * them refuses every start. The missing ones are registered (a self-hosted cluster allows it); where that is refused
 * (a hosted cluster), start-up stops with the command an operator runs once.
 */
export async function ensureSearchAttributes(connection: OperatorConnection, namespace: string): Promise<void> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTES.filter((key) => !Object.hasOwn(customAttributes ?? {}, key.name));
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, KEYWORD])),
    });
  } catch (error) {
    const commands = missing
      .map(
        (key) => `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type Keyword`,
      )
      .join(' && ');
    throw new ConfigError(
      `the Temporal namespace ${namespace} lacks the search attributes ${missing.map((k) => k.name).join(', ')} and they cannot be added from here (${(error as Error).message}); register them once: ${commands}`,
    );
  }
}
