import { clientErrorAnswer } from '../../../src/net/parser-errors';

describe('clientErrorAnswer', () => {
  test('each refusal of the HTTP parser gets the status Node would answer, in the gateway envelope types', () => {
    expect(clientErrorAnswer('HPE_HEADER_OVERFLOW')).toMatchObject({ status: 431, type: 'request_too_large' });
    expect(clientErrorAnswer('ERR_HTTP_REQUEST_TIMEOUT')).toMatchObject({ status: 408, type: 'invalid_request_error' });
    expect(clientErrorAnswer('HPE_INVALID_METHOD')).toMatchObject({ status: 400, type: 'invalid_request_error' });
    expect(clientErrorAnswer(undefined)).toMatchObject({ status: 400 });
  });
});
