/**
 * Who is calling, after authentication. Every route authorizes against this.
 */
export type AuthMethod = 'browser_session' | 'api_key' | 'service_token' | 'okta' | 'internal_service' | 'unknown';
export type ActorType = 'anonymous' | 'authenticated' | 'service' | 'unknown';
export type Access = 'none' | 'read' | 'write';

export interface Principal {
  method: AuthMethod;
  actorType: ActorType;
  accountId: string;
  /** Identity-provider callers may belong to several accounts. */
  accountIds?: string[];
  /** API keys are pinned to one project; other credentials may reach several. */
  projectId?: string;
  keyId?: string;
  /** Per-scope access of an API key. */
  scopes?: Record<string, Access>;
  /** API keys: `standard`, or for MCP `personal` (bound to a user) / `project`. */
  keyType?: 'standard' | 'personal' | 'project';
  /** Site (registered client) a service token or browser token speaks for. */
  clientId?: string;
  /** MCP personal keys and identity-provider tokens: the user's subject. */
  subject?: string;
  /** Browser session tokens: the agent and (optional) visitor they are bound to. */
  agentId?: string;
  ownerId?: string;
}
