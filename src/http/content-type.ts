/**
 * Request-body parsing (Dynamo `lib/kv-router/src/services/selection/server.rs`). Routes that take a JSON body accept `application/json` and
 * `application/*+json` (axum's `Json` extractor rule), parsed u64-exact with {@link parseJson};
 * anything else is a 415, and a body that is not valid UTF-8 or not valid JSON a 400 (serde_json
 * refuses invalid UTF-8; decoding it leniently would turn it into U+FFFD). Routes whose body Dynamo ignores
 * (`prefill_complete`, the DELETEs) accept any body and drop it, so a client that sends one with
 * an odd content type is not refused.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SelectionError } from '../core/errors.js';
import { parseJson } from '../core/wire/json.js';

// `application/json` or `application/<anything>+json`, with or without parameters.
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;|$)/i;

/** 415 with axum's text. */
export const unsupportedMediaType = (): SelectionError =>
  new SelectionError('SEL_UNSUPPORTED_MEDIA_TYPE', 'Expected request with `Content-Type: application/json`');

/** 400 with axum's prefix and the parser's positioned message. */
export const invalidJson = (err: unknown): SelectionError =>
  new SelectionError('SEL_INVALID_JSON', `Failed to parse the request body as JSON: ${err instanceof Error ? err.message : String(err)}`);

/** 422: a JSON body that is not an object (Dynamo's request types are all structs). */
const notAnObject = (v: unknown): SelectionError => {
  const kind = v === null ? 'null' : Array.isArray(v) ? 'a sequence' : typeof v === 'bigint' ? 'an integer' : `a ${typeof v}`;
  return new SelectionError('SEL_UNPROCESSABLE', `Failed to deserialize the JSON body into the target type: invalid type: ${kind}, expected an object`);
};

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Replaces Fastify's parsers with the u64-exact JSON parser (the only accepted body type). */
export function useJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer' }, (_req, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(invalidJson(new Error('the body is not valid UTF-8')), undefined);
      return;
    }
    let value: unknown;
    try {
      value = parseJson(text);
    } catch (err) {
      done(invalidJson(err), undefined);
      return;
    }
    done(null, value);
  });
}

/** For an encapsulated scope whose routes ignore the body: accept any content type, keep nothing. */
export function ignoreBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // Buffered (so the 8 MiB limit still applies) and dropped.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, undefined));
}

/**
 * The parsed body of a route that requires a JSON object. No body at all means the content type
 * was never checked by a parser: that is a 415, like axum's extractor on a bodiless request.
 */
export function jsonObjectBody(req: FastifyRequest): Record<string, unknown> {
  const body = req.body;
  if (body === undefined) throw unsupportedMediaType();
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw notAnObject(body);
  return body as Record<string, unknown>;
}
