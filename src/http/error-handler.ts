/**
 * The one place errors become HTTP responses (Dynamo `lib/kv-router/src/services/selection/server.rs`, `lib/kv-router/src/services/selection/error.rs`): a {@link SelectionError} keeps its
 * catalogue status and `{"error", "details"?}` body; Fastify's own transport errors are mapped
 * to catalogue codes; anything else is a 500 (logged with its stack, answered without it).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SelectionError, errorBody } from '../core/errors.js';
import { unsupportedMediaType } from './content-type.js';

/** Fastify error codes -> catalogue (texts follow axum's rejections where Dynamo shows them). */
const FASTIFY_CODES: Readonly<Record<string, () => SelectionError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => new SelectionError('SEL_BODY_TOO_LARGE', 'Failed to buffer the request body: length limit exceeded'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new SelectionError('SEL_INVALID_JSON', 'Failed to buffer the request body: content length mismatch'),
};

/** Maps anything a route or Fastify throws to a catalogue error. */
export function toHttpError(err: unknown): SelectionError {
  if (err instanceof SelectionError) return err;
  const fe = err as Partial<FastifyError>;
  const known = fe.code !== undefined ? FASTIFY_CODES[fe.code] : undefined;
  if (known) return known();
  // Other client errors Fastify raises itself (e.g. a malformed %-escape in the URL).
  if (fe.statusCode === 400) return new SelectionError('SEL_BAD_REQUEST', fe.message ?? 'bad request');
  // Unexpected: a bug, not the client's fault; the message may leak internals, so it stays in the log.
  return new SelectionError('SEL_INTERNAL', 'internal error', undefined, { cause: err });
}

/** Answers `err` with its catalogue status and body. */
export function sendError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const e = toHttpError(err);
  // 503 (not ready, shutting down) and 429 are normal operation: debug, like other client errors.
  if (e.status >= 500 && e.status !== 503) req.log.error({ err, code: e.code }, 'request failed');
  else req.log.debug({ code: e.code, error: e.message }, 'request rejected');
  reply.code(e.status).send(errorBody(e));
}

/** Installs the handler on `app` (and, by inheritance, every scope under it). */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
}
