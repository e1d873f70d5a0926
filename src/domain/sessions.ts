import { z } from 'zod';
import { applyMetadataPatch, metadataPatchSchema, type FieldError } from './agents';
import { chars, metadataMap, pageLimit, queryBoolean } from './fields';

export const SESSION_LIMITS = { titleChars: 512, ownerIdChars: 255, metadataKeys: 16, agentIdChars: 64 } as const;

/**
 * Session status and the run phase it stands for (documented in docs/agents-and-sessions.md):
 * idle: no run holds the session, or the run is paused waiting for client tool results;
 * running: a run is in flight (transient failures are retried within it); rescheduling:
 * reserved, not set by this runtime; terminated: the session was deleted; error: the last run
 * ended in session.error.
 */
export const SESSION_STATUSES = ['idle', 'running', 'rescheduling', 'terminated', 'error'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

const agentId = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(SESSION_LIMITS.agentIdChars);

/** `agent`: an agent id, or `{id, type: 'agent', version}` pinning the version the caller saw. */
export const SessionAgentRefSchema = z.union(
  [
    agentId.transform((id) => ({ id, version: undefined as number | undefined })),
    z.strictObject({
      id: agentId,
      type: z.literal('agent').optional(),
      version: z.number().int().min(1).optional(),
    }),
  ],
  { error: "must be an agent id or an object {id, type: 'agent', version}" },
);

export const SessionCreateSchema = z.strictObject({
  agent: SessionAgentRefSchema,
  title: chars(SESSION_LIMITS.titleChars).nullish(),
  reasoning_effort: z.string({ error: 'must be a string' }).max(64).nullish(),
  metadata: metadataMap().optional(),
  owner_id: chars(SESSION_LIMITS.ownerIdChars).refine((v) => v.length > 0, 'must not be empty').nullish(),
});
export type SessionCreate = z.infer<typeof SessionCreateSchema>;

/**
 * PATCH /v1/sessions/{id}: only `title` (a string sets it, null clears it) and `metadata`
 * (per-key patch as on agents). `owner_id` is immutable, so sending it at all is a 400
 * that says so; any other field is an unknown-field 400.
 */
export const SessionPatchSchema = z.strictObject({
  title: chars(SESSION_LIMITS.titleChars).nullish(),
  metadata: metadataPatchSchema().optional(),
  owner_id: z
    .unknown()
    .optional()
    .refine((v) => v === undefined, 'is immutable: it is recorded when the session is created and cannot be changed'),
});
export type SessionPatch = z.infer<typeof SessionPatchSchema>;

export interface SessionEditableFields {
  title: string | null;
  metadata: Record<string, string>;
}

/** The session's title and metadata after the patch; the metadata key limit applies to the result. */
export function applySessionPatch(current: SessionEditableFields, patch: SessionPatch): { fields: SessionEditableFields } | { error: FieldError } {
  const metadata = applyMetadataPatch(current.metadata, patch.metadata);
  if ('error' in metadata) return metadata;
  return { fields: { title: patch.title === undefined ? current.title : patch.title, metadata: metadata.metadata } };
}

export const SessionListQuerySchema = z
  .strictObject({
    project_id: z.string({ error: 'is required' }).min(1, 'is required').max(64, 'must be at most 64 characters'),
    limit: pageLimit,
    page: z.string().min(1).max(512).optional(),
    agent_id: agentId.optional(),
    metadata_key: z.string().min(1).max(64).optional(),
    metadata_value: z.string().max(512).optional(),
    include_archived: queryBoolean.default(false),
  })
  .refine((q) => (q.metadata_key === undefined) === (q.metadata_value === undefined), {
    message: 'metadata_key and metadata_value must be given together',
    path: ['metadata_key'],
  });
export type SessionListQuery = z.infer<typeof SessionListQuerySchema>;
