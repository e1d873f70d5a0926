import { startSimulator, type Simulator } from '../../src/providers/simulator/server';

export type { Simulator };

/** The provider simulator in-process on an ephemeral port. */
export function startTestSimulator(): Promise<Simulator> {
  return startSimulator({ port: 0 });
}
