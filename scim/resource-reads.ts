import type { Response } from 'express';
import { pathParam, type Operations } from '../platform/http/operations';
import { ScimError, SCIM_CONTENT_TYPE } from './scim-errors';
import {
  listResponse,
  parseListQuery,
  parseSelection,
  project,
  searchRequestQuery,
  type Selection,
} from './resource-shapes';

/** What the reads of one SCIM resource type need: its store lookups, its filter translation and its resource shape. */
export interface ResourceType<Row, Filter> {
  noun: 'user' | 'group';
  find(id: string): Promise<Row | undefined>;
  list(where: Filter | undefined, startIndex: number, count: number): Promise<{ total: number; rows: Row[] }>;
  filterToSql(filter: string): Filter;
  resource(row: Row): Record<string, unknown> & { meta: { location: string; version: string } };
}

/**
 * The reads every resource type answers alike (list, search, read one), named for the type as in the route table
 * (`listScimUsers`, `searchScimUsers`, `getScimUser`), and what its writes share: `load` (404 when absent) and `send`
 * (the resource with its ETag, and its Location when created).
 */
export function resourceReads<Row, Filter>(type: ResourceType<Row, Filter>) {
  async function load(id: string): Promise<Row> {
    const row = await type.find(id);
    if (!row) throw new ScimError(404, `no ${type.noun} ${id}`);
    return row;
  }

  function send(res: Response, row: Row, status = 200, selection: Selection = {}): void {
    const resource = type.resource(row);
    if (status === 201) res.location(resource.meta.location);
    res.status(status).type(SCIM_CONTENT_TYPE).set('ETag', resource.meta.version).json(project(resource, selection));
  }

  /** A list, from a GET's query or a POST search's body. */
  async function list(res: Response, query: unknown): Promise<void> {
    const { startIndex, count, filter, ...selection } = parseListQuery(query);
    const { total, rows } = await type.list(filter ? type.filterToSql(filter) : undefined, startIndex, count);
    res.type(SCIM_CONTENT_TYPE).json(
      listResponse(
        rows.map((row) => project(type.resource(row), selection)),
        total,
        startIndex,
      ),
    );
  }

  const noun = type.noun === 'user' ? 'User' : 'Group';
  const reads: Operations = {
    [`listScim${noun}s`]: (req, res) => list(res, req.query),
    [`searchScim${noun}s`]: (req, res) => list(res, searchRequestQuery(req.body)),
    [`getScim${noun}`]: async (req, res) => send(res, await load(pathParam(req, 'id')), 200, parseSelection(req.query)),
  };
  return { load, send, reads };
}
