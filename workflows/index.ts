// Every workflow the worker registers. Only deterministic code may be imported here.
export { healthCheckWorkflow } from './health-check';
export { sessionWorkflow } from './session';
