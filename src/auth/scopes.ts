import type { Access, Principal } from './principal';

/**
 * Scopes an API key grants, each at `none`, `read` or `write` (write implies read).
 * The spec names chat, image, speech, transcribe and mcp; the rest guard the
 * resource APIs: reads need `read`, everything else `write`.
 */
export const SCOPES = ['chat', 'image', 'speech', 'transcribe', 'mcp', 'agents', 'sessions', 'kb', 'sites', 'analytics'] as const;
export type Scope = (typeof SCOPES)[number];

export const PRESETS = ['all', 'read_only', 'restricted'] as const;
export type Preset = (typeof PRESETS)[number];

const RANK: Record<Access, number> = { none: 0, read: 1, write: 2 };

/** The scope map a key gets from its preset (restricted keys keep their own mapping). */
export function scopesForPreset(preset: Preset, restricted: Partial<Record<Scope, Access>> = {}): Record<Scope, Access> {
  const map = {} as Record<Scope, Access>;
  for (const scope of SCOPES) {
    map[scope] = preset === 'all' ? 'write' : preset === 'read_only' ? 'read' : (restricted[scope] ?? 'none');
  }
  return map;
}

/** Parses `chat:write=write,agents=read` or `chat=write,agents=read` into a restricted mapping. */
export function parseScopeList(text: string): Partial<Record<Scope, Access>> {
  const map: Partial<Record<Scope, Access>> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [rawName, rawAccess] = part.split('=');
    const name = rawName!.replace(/:(read|write)$/, '') as Scope;
    const access = (rawAccess ?? rawName!.split(':')[1] ?? 'write') as Access;
    if (!SCOPES.includes(name)) throw new Error(`unknown scope '${name}' (known: ${SCOPES.join(', ')})`);
    if (!(access in RANK)) throw new Error(`unknown access '${access}' for scope ${name} (none, read, write)`);
    map[name] = access;
  }
  return map;
}

export function hasAccess(principal: Principal, scope: Scope, access: Exclude<Access, 'none'>): boolean {
  if (principal.method !== 'api_key') return true; // other credentials are checked by kind and binding
  const granted = principal.scopes?.[scope] ?? 'none';
  return RANK[granted] >= RANK[access];
}
