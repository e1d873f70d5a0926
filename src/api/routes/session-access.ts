import type { Deps } from '../../deps';
import type { Principal } from '../../auth/principal';
import { requireResourceProject } from '../../auth/tenancy';
import { findSession, type SessionRow } from '../../store/sessions';
import { notFound } from '../errors';

/**
 * The session the principal may act on, or 404 exactly as if it did not exist. A browser
 * session token reaches only sessions of its agent and, when the session has an owner,
 * only that visitor's; API keys and service tokens reach their project(s).
 */
export async function loadAccessibleSession(deps: Deps, principal: Principal, sessionId: string): Promise<SessionRow> {
  const session = await findSession(deps.db, sessionId);
  if (principal.method === 'browser_session') {
    const bound =
      session &&
      principal.projectId === session.project_id &&
      principal.agentId === session.agent_id &&
      (session.owner_id === null || principal.ownerId === session.owner_id);
    if (!bound) throw notFound('session');
    return session;
  }
  // An absent session pays the same project lookup as another project's (requireResourceProject).
  await requireResourceProject(deps.db, principal, session?.project_id, 'session');
  if (!session) throw notFound('session');
  return session;
}
