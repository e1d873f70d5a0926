import { loadConfig } from '../config';
import { LazyTemporalClient } from '../temporal/client';
import { replaySession } from '../temporal/replay';

/** `npm run -s replay -- <session_id>`: downloads the session's history and replays it. */
async function main(): Promise<void> {
  const sessionId = process.argv[2];
  if (!sessionId) throw new Error('usage: npm run -s replay -- <session_id>');
  const config = loadConfig();
  const temporal = new LazyTemporalClient({ address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE });
  try {
    const { events } = await replaySession(await temporal.get(), sessionId);
    process.stdout.write(`${JSON.stringify({ session_id: sessionId, history_events: events, deterministic: true })}\n`);
  } finally {
    await temporal.close();
  }
}

main().catch((error: Error) => {
  process.stderr.write(`replay failed: ${error.name}: ${error.message}\n`);
  process.exit(1);
});
