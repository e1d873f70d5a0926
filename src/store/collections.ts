import type { Queryable } from './db';

/** Knowledge-base collection rows (table kb_collections). Every lookup is scoped to a project. */
export interface CollectionRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, project_id, name, description, metadata, created_at, updated_at';
const UNIQUE_VIOLATION = '23505';
const NAME_CONSTRAINT = 'kb_collections_project_name';

const isNameConflict = (error: unknown) => {
  const e = error as { code?: string; constraint?: string };
  return e.code === UNIQUE_VIOLATION && e.constraint === NAME_CONSTRAINT;
};

export async function insertCollection(
  db: Queryable,
  input: { id: string; projectId: string; name: string; description?: string; metadata?: Record<string, unknown> },
): Promise<{ row: CollectionRow } | { conflict: 'name' }> {
  try {
    const { rows } = await db.query<CollectionRow>(
      `INSERT INTO kb_collections (id, project_id, name, description, metadata)
       VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [input.id, input.projectId, input.name, input.description ?? null, input.metadata === undefined ? null : JSON.stringify(input.metadata)],
    );
    return { row: rows[0]! };
  } catch (error) {
    if (isNameConflict(error)) return { conflict: 'name' };
    throw error;
  }
}

export async function findCollection(db: Queryable, projectId: string, id: string): Promise<CollectionRow | null> {
  const { rows } = await db.query<CollectionRow>(`SELECT ${COLUMNS} FROM kb_collections WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

/** Unscoped lookup: the caller must authorize the row's project before revealing anything. */
export async function findCollectionById(db: Queryable, id: string): Promise<CollectionRow | null> {
  const { rows } = await db.query<CollectionRow>(`SELECT ${COLUMNS} FROM kb_collections WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Position of a row in the listing order; microseconds because a JS Date would round them away. */
export interface CollectionPosition {
  createdAtMicros: string;
  id: string;
}

/** Keyset page ordered by (created_at, id); `after` is the position of the previous page's last row. */
export async function listCollections(
  db: Queryable,
  projectId: string,
  page: { limit: number; after?: CollectionPosition },
): Promise<(CollectionRow & { position: CollectionPosition })[]> {
  const params: unknown[] = [projectId, page.limit];
  let where = 'project_id = $1';
  if (page.after) {
    params.push(page.after.createdAtMicros, page.after.id);
    where += " AND (created_at, id) > (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4)";
  }
  const { rows } = await db.query<CollectionRow & { created_us: string }>(
    `SELECT ${COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us
       FROM kb_collections WHERE ${where} ORDER BY created_at, id LIMIT $2`,
    params,
  );
  return rows.map(({ created_us, ...row }) => ({ ...row, position: { createdAtMicros: created_us, id: row.id } }));
}

export async function updateCollection(
  db: Queryable,
  projectId: string,
  id: string,
  patch: { name?: string; description?: string | null; metadata?: Record<string, unknown> | null },
): Promise<{ row: CollectionRow } | { conflict: 'name' } | null> {
  const sets: string[] = [];
  const params: unknown[] = [id, projectId];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (patch.name !== undefined) set('name', patch.name);
  if (patch.description !== undefined) set('description', patch.description);
  if (patch.metadata !== undefined) set('metadata', patch.metadata === null ? null : JSON.stringify(patch.metadata));
  try {
    const { rows } = await db.query<CollectionRow>(
      `UPDATE kb_collections SET ${[...sets, 'updated_at = now()'].join(', ')}
        WHERE id = $1 AND project_id = $2 RETURNING ${COLUMNS}`,
      params,
    );
    return rows[0] ? { row: rows[0] } : null;
  } catch (error) {
    if (isNameConflict(error)) return { conflict: 'name' };
    throw error;
  }
}

export async function deleteCollection(db: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM kb_collections WHERE id = $1 AND project_id = $2', [id, projectId]);
  return (rowCount ?? 0) > 0;
}

/** Records `collectionId` as the primary collection of the site `clientId` (last writer wins). */
export async function setSitePrimaryCollection(db: Queryable, clientId: string, projectId: string, collectionId: string): Promise<void> {
  await db.query(
    `INSERT INTO kb_site_primary_collections (client_id, project_id, collection_id) VALUES ($1, $2, $3)
     ON CONFLICT (client_id) DO UPDATE SET project_id = EXCLUDED.project_id, collection_id = EXCLUDED.collection_id, updated_at = now()`,
    [clientId, projectId, collectionId],
  );
}

export async function getSitePrimaryCollectionId(db: Queryable, clientId: string): Promise<string | null> {
  const { rows } = await db.query<{ collection_id: string }>(
    'SELECT collection_id FROM kb_site_primary_collections WHERE client_id = $1',
    [clientId],
  );
  return rows[0]?.collection_id ?? null;
}
