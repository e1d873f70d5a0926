import { ServiceError } from '@temporalio/client';
import { temporalUnreachable } from '../../../src/temporal/reconciler';

const grpc = (code: number) => Object.assign(new Error(`${code} grpc`), { code });

describe('temporalUnreachable (a failed re-signal ends the reconciler pass)', () => {
  test("the client's wrapped gRPC errors: deadline exceeded and unavailable, read from the cause", () => {
    expect(temporalUnreachable(new ServiceError('Failed to signalWithStart Workflow', { cause: grpc(4) }))).toBe(true);
    expect(temporalUnreachable(new ServiceError('Failed to signalWithStart Workflow', { cause: grpc(14) }))).toBe(true);
    expect(temporalUnreachable(grpc(14))).toBe(true);
    expect(temporalUnreachable(new Error('Failed to connect before the deadline'))).toBe(true);
  });

  test('anything about the call itself is not: the pass goes on to the next session', () => {
    expect(temporalUnreachable(new ServiceError('Failed to signalWithStart Workflow', { cause: grpc(3) }))).toBe(false); // INVALID_ARGUMENT
    expect(temporalUnreachable(new ServiceError('x', { cause: grpc(6) }))).toBe(false); // ALREADY_EXISTS
    expect(temporalUnreachable(new Error('something else'))).toBe(false);
    expect(temporalUnreachable(undefined)).toBe(false);
  });
});
