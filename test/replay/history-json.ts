import { createRequire } from 'node:module';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

/**
 * Temporal's JSON history format (as `temporal workflow show --output json` writes it),
 * to and from the History object the SDK replays.
 *
 * Why not `historyToJSON` / `historyFromJSON` from @temporalio/common: in this install
 * @temporalio/common and @temporalio/proto each get their own nested copy of protobufjs 8
 * (the root protobufjs is 7, for @grpc/proto-loader), so common's protojson rejects proto's
 * types ("TypeError: type must be a Type"); the same breaks `Worker.runReplayHistory` when
 * given JSON. Here protojson is loaded from the protobufjs that @temporalio/proto itself uses.
 */
type ProtoJson = { toJson(type: unknown, message: unknown): unknown; fromJson(type: unknown, json: unknown, options?: unknown): unknown };
const protojson = createRequire(require.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as ProtoJson;
const HistoryClass = proto.temporal.api.history.v1.History;
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType('temporal.api.history.v1.History');

export type History = proto.temporal.api.history.v1.IHistory;

export function historyToJson(history: History): unknown {
  return protojson.toJson(historyType, HistoryClass.fromObject(history));
}

export function historyFromJson(json: unknown): History {
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History | null;
  if (!history || !Array.isArray(history.events) || history.events.length === 0) throw new TypeError('not a Temporal history');
  return history;
}
