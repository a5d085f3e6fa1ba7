/** Log scrubbing per docs/protocol.md#log-scrubbing: the rules live in the shared protocol package. */
export {
  FILTERED,
  isSecretHeader,
  isSecretKey,
  SECRET_HEADERS,
  SECRET_KEYS,
  scrub,
  scrubHeaders,
  VECTOR_MIN_DIMS,
} from './protocol/index.ts';
