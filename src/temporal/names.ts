/**
 * Names shared by the api (which signals) and the worker (which runs workflows).
 * Pure module: safe to import from workflow code.
 */
export const sessionWorkflowId = (sessionId: string): string => `session/${sessionId}`;

export const SIGNAL_EVENTS_APPENDED = 'eventsAppended';
export const SIGNAL_INTERRUPT = 'interrupt';
export const SIGNAL_TITLE_CHANGED = 'titleChanged';

export const SEARCH_ATTRIBUTES = {
  projectId: 'ProjectId',
  agentId: 'AgentId',
  sessionStatus: 'SessionStatus',
} as const;
