import {
  compatHeader,
  HEADERS,
  RESPONSE_HEADER_NAMES,
  SDK_UPLOAD_HEADERS,
  TRACE_HEADER,
} from '@bds/client/protocol';

/**
 * Cross-origin access: any page may call the service (the keys, not the origin, say who calls) and
 * read every answer with the headers it names, errors, downloads and uploads included.
 */

/** What every answer carries, so that a browser hands the page the answer and these headers. */
export const CORS_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': [...RESPONSE_HEADER_NAMES, 'Location', TRACE_HEADER].join(', '),
};

const CREDENTIAL_HEADERS = Object.entries(HEADERS)
  .filter(([name]) => name !== 'webhookKey')
  .map(([, header]) => header);

/**
 * Request headers a page may send besides the credentials: the ones the stock Parse SDKs and common
 * browser libraries add (the service reads the upload ones and ignores the others).
 */
const CLIENT_HEADERS = [
  'X-Parse-Client-Version',
  'X-Parse-Revocable-Session',
  'X-Requested-With',
  'Pragma',
  'Cache-Control',
  ...Object.values(SDK_UPLOAD_HEADERS),
];

/** The answer to a preflight (`OPTIONS`). */
export const CORS_PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  ...CORS_ANSWER_HEADERS,
  'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'Access-Control-Allow-Headers': [
    'Content-Type',
    ...CREDENTIAL_HEADERS,
    ...CREDENTIAL_HEADERS.map(compatHeader),
    ...CLIENT_HEADERS,
  ].join(', '),
  'Access-Control-Max-Age': '86400',
};
