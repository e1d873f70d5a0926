import type { Queryable } from '../store/db';
import { findProject } from '../store/accounts';
import { badRequest, forbidden, notFound } from '../api/errors';
import type { Principal } from './principal';

/**
 * Whether the principal may act on the project. API keys and browser session tokens
 * are pinned to one project; site service tokens and identity-provider tokens reach
 * every project of their account(s).
 */
export async function canAccessProject(db: Queryable, principal: Principal, projectId: string): Promise<boolean> {
  if (principal.method === 'api_key' || principal.method === 'browser_session') return principal.projectId === projectId;
  const project = await findProject(db, projectId);
  if (!project) return false;
  if (principal.method === 'okta') return (principal.accountIds ?? [principal.accountId]).includes(project.account_id);
  return project.account_id === principal.accountId;
}

/**
 * For a project named explicitly by the caller (a body field or query parameter):
 * 403 when the caller may not use it. An absent project answers the same 403, so
 * ids cannot be probed.
 */
export async function requireProjectAccess(db: Queryable, principal: Principal, projectId: string): Promise<void> {
  if (!(await canAccessProject(db, principal, projectId))) {
    throw forbidden(`the credential is not authorized for project '${projectId}'`);
  }
}

/**
 * For a resource found by id: a resource of another project answers exactly like an
 * absent one (404), never a hint that it exists.
 */
export async function requireResourceProject(db: Queryable, principal: Principal, projectId: string | undefined, what: string): Promise<void> {
  // An absent resource costs the same project lookup as another project's would, so the
  // answer's timing does not tell them apart either.
  if (!(await canAccessProject(db, principal, projectId ?? ''))) throw notFound(what);
}

/** The project a request acts on: explicit, or the one an API key is pinned to. */
export function projectOf(principal: Principal, explicit?: string): string {
  const projectId = explicit ?? principal.projectId;
  if (!projectId) throw badRequest('project_id is required for this credential', 'project_id');
  return projectId;
}
