import type { Queryable } from './db';
import { newId } from './ids';

export interface ProjectRow {
  id: string;
  account_id: string;
  name: string;
  created_at: Date;
}

export async function createAccount(db: Queryable, name: string): Promise<{ id: string }> {
  const id = newId('acct');
  await db.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [id, name]);
  return { id };
}

/** Creates a project and its (empty) credit balance row. */
export async function createProject(db: Queryable, accountId: string, name: string): Promise<{ id: string }> {
  const id = newId('proj');
  const { rowCount } = await db.query(
    `WITH p AS (INSERT INTO projects (id, account_id, name) SELECT $1, id, $3 FROM accounts WHERE id = $2 RETURNING id)
     INSERT INTO project_credits (project_id) SELECT id FROM p`,
    [id, accountId, name],
  );
  if (rowCount === 0) throw new Error(`no account with id ${accountId}`);
  return { id };
}

export async function accountExists(db: Queryable, accountId: string): Promise<boolean> {
  return ((await db.query('SELECT 1 FROM accounts WHERE id = $1', [accountId])).rowCount ?? 0) > 0;
}

export async function findProject(db: Queryable, projectId: string): Promise<ProjectRow | undefined> {
  const { rows } = await db.query<ProjectRow>('SELECT id, account_id, name, created_at FROM projects WHERE id = $1', [projectId]);
  return rows[0];
}
