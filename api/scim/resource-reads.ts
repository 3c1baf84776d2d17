import type { Response, Router } from 'express';
import { ScimError, SCIM_CONTENT_TYPE } from './errors';
import { listResponse, parseListQuery, parseSelection, project, searchRequestQuery, type Selection } from './resources';

/** What the reads of one SCIM resource type need: its store lookups, its filter translation and its resource shape. */
export interface ResourceType<Row, Filter> {
  noun: 'user' | 'group';
  find(id: string): Promise<Row | undefined>;
  list(where: Filter | undefined, startIndex: number, count: number): Promise<{ total: number; rows: Row[] }>;
  filterToSql(filter: string): Filter;
  resource(row: Row): Record<string, unknown> & { meta: { location: string; version: string } };
}

/**
 * Registers the reads every resource type answers alike (`GET /`, `POST /.search`, `GET /:id`) and returns what its
 * writes share: `load` (404 when absent) and `send` (the resource with its ETag, and its Location when created).
 */
export function resourceReads<Row, Filter>(router: Router, type: ResourceType<Row, Filter>) {
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

  router.get('/', (req, res) => list(res, req.query));
  router.post('/.search', (req, res) => list(res, searchRequestQuery(req.body)));
  router.get('/:id', async (req, res) => send(res, await load(req.params.id), 200, parseSelection(req.query)));
  return { load, send };
}
