import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Deps } from '../../deps';
import { sitePrivateAddressesAllowed } from '../../config';
import type { Principal } from '../../auth/principal';
import { SITE_ID_PATTERN, SITE_STATUSES } from '../../domain/sites';
import { decryptSiteSecret } from '../../domain/site-secret';
import { databaseUnavailable } from '../../store/db-errors';
import { connectedSiteIds, findSiteById, listProjectSites, type SiteRow } from '../../store/sites';
import { loggableError } from '../middleware/error-handler';
import { listAbilities, runAbility, SiteCallError, type SiteTarget } from './site-abilities';

export const MCP_SERVER_NAME = 'agent-gateway';
export const MCP_SERVER_VERSION = '0.1.0';

/** `cms_connection_status`: whether the key's owner connected their CMS account on the site. */
export type CmsConnectionStatus = 'connected' | 'not_connected' | 'no_acting_user';

const result = (value: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value,
});

export const toolError = (code: string, message: string): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: JSON.stringify({ error: { code, message } }) }],
  structuredContent: { error: { code, message } },
});

/** Each tool's input schema: the SDK checks calls with them, and so does the route, first (its error shape). */
export const TOOL_INPUTS = {
  ping: {},
  list_account_sites: { status: z.enum(SITE_STATUSES).optional().describe('Registration status to list; default active.') },
  list_site_abilities: { site_id: z.string().max(128).describe('The site id from list_account_sites.') },
  run_site_ability: {
    site_id: z.string().max(128).describe('The site id from list_account_sites.'),
    // (Ability names are short, `namespace/name`; the name is logged with each run.)
    ability: z.string().min(1).max(256).describe('The ability name from list_site_abilities.'),
    input: z.record(z.string(), z.unknown()).optional().describe("The ability's input, per its input_schema."),
  },
} as const;

/**
 * One MCP server per request (the transport is stateless), bound to the API key that
 * authenticated it: every tool sees only the key's project, and the ability tools act
 * for the personal key's owner.
 */
export function buildMcpServer(deps: Deps, principal: Principal): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION });
  const projectId = principal.projectId!;
  const actingUser = principal.keyType === 'personal' ? principal.subject : undefined;

  /**
   * Every tool's errors end here. The SDK would send any thrown message to the client (a
   * database address, a decryption failure) and log nothing; a site's own failure keeps its
   * code, anything else is logged and answered with a fixed message.
   */
  const guarded =
    <P extends unknown[]>(tool: string, handler: (...args: P) => Promise<CallToolResult>) =>
    async (...args: P): Promise<CallToolResult> => {
      try {
        return await handler(...args);
      } catch (error) {
        if (error instanceof SiteCallError) return toolError(error.code, error.message);
        deps.logger.error({ err: loggableError(error), tool, key_id: principal.keyId }, 'mcp tool failed');
        return databaseUnavailable(error)
          ? toolError('unavailable', 'a required dependency is unavailable; retry after a short delay')
          : toolError('internal_error', 'the tool failed unexpectedly');
      }
    };

  server.registerTool('ping', { title: 'Ping', description: 'Checks that the MCP endpoint and the API key work. Returns "pong".' }, guarded('ping', async () =>
    result({ message: 'pong', project_id: projectId }),
  ));

  server.registerTool(
    'list_account_sites',
    {
      title: 'List sites',
      description: "Lists the sites registered to this API key's project, with the key owner's CMS connection status.",
      inputSchema: TOOL_INPUTS.list_account_sites,
    },
    guarded('list_account_sites', async ({ status }) => {
      const sites = await listProjectSites(deps.db, projectId, status ?? 'active');
      const connected = actingUser ? await connectedSiteIds(deps.db, actingUser, sites.map((s) => s.site_id)) : new Set<string>();
      return result({
        sites: sites.map((site) => ({
          site_id: site.site_id,
          site_url: site.site_url,
          display_name: site.display_name,
          status: site.status,
          cms_connection_status: (actingUser ? (connected.has(site.site_id) ? 'connected' : 'not_connected') : 'no_acting_user') satisfies CmsConnectionStatus,
          created_at: site.created_at.toISOString(),
        })),
      });
    }),
  );

  /** The checks both ability tools share; returns the site to call or a tool error. */
  async function abilityTarget(tool: string, siteId: string): Promise<{ site: SiteTarget } | { error: CallToolResult }> {
    if (!actingUser) {
      return { error: toolError('permission_denied', `${tool} needs a personal MCP key (bound to a user); this key has no acting user and can use ping and list_account_sites only`) };
    }
    // A text that cannot be a site id (NUL, any length) is not looked up: not found, like any absent site.
    const site: SiteRow | undefined = SITE_ID_PATTERN.test(siteId) ? await findSiteById(deps.db, siteId) : undefined;
    if (!site || site.project_id !== projectId) return { error: toolError('not_found', `no site '${siteId}' in this key's project`) };
    if (site.status !== 'active') return { error: toolError('permission_denied', `the site is ${site.status}`) };
    const connected = await connectedSiteIds(deps.db, actingUser, [site.site_id]);
    if (!connected.has(site.site_id)) return { error: toolError('permission_denied', "the key's owner has not connected their CMS account on this site") };
    return {
      site: {
        siteId: site.site_id,
        siteUrl: site.site_url,
        secretHex: decryptSiteSecret(deps.config.GATEWAY_SECRET, site.site_id, site.hmac_secret_encrypted),
        publicOnly: !sitePrivateAddressesAllowed(deps.config),
      },
    };
  }

  server.registerTool(
    'list_site_abilities',
    {
      title: 'List site abilities',
      description: 'Lists the abilities (actions) a site offers to the key owner. Needs a personal key.',
      inputSchema: TOOL_INPUTS.list_site_abilities,
    },
    guarded('list_site_abilities', async ({ site_id }, extra) => {
      const target = await abilityTarget('list_site_abilities', site_id);
      if ('error' in target) return target.error;
      return result({ site_id, abilities: await listAbilities(target.site, actingUser!, extra.signal) });
    }),
  );

  server.registerTool(
    'run_site_ability',
    {
      title: 'Run a site ability',
      description: 'Runs one ability on a site as the key owner and returns its output. Needs a personal key.',
      inputSchema: TOOL_INPUTS.run_site_ability,
    },
    guarded('run_site_ability', async ({ site_id, ability, input }, extra) => {
      const target = await abilityTarget('run_site_ability', site_id);
      if ('error' in target) return target.error;
      deps.logger.info({ site_id, ability, acting_user: actingUser, key_id: principal.keyId }, 'mcp ability run'); // audit trail
      return result({ site_id, ability, output: await runAbility(target.site, actingUser!, ability, input, extra.signal) });
    }),
  );

  // Stateless: the tool list never changes while a client could listen (GET is 405).
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}
