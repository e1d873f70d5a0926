import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { ping } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds' });

/** A trivial workflow that proves a worker is polling and can run activities. */
export async function healthCheckWorkflow(message: string): Promise<string> {
  return await ping(message);
}
