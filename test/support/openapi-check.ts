/**
 * Every response the HTTP tests receive is checked against the service's OpenAPI document, so
 * the document cannot drift from what the service sends. The request helpers (the in-process
 * server of test/integration/http/server.ts and the service processes of service-process.ts)
 * call {@link checkResponse} on each response; a response the document does not describe throws
 * at the call, failing the test that made it:
 * - a path no route serves must be `404 {"error"}`; a documented path under an undocumented
 *   method must be `405 {"error"}` with an `Allow` header;
 * - otherwise the status must be one the operation documents (unknown statuses fail), the media
 *   type one it lists, and a JSON body must validate against that status's schema (ajv, JSON
 *   Schema 2020-12, the dialect of OpenAPI 3.1). Response objects are closed in the document, so
 *   an undocumented field fails too.
 * The body is read with plain `JSON.parse`, as a generated client's validator would read it.
 * Every checked response is recorded in {@link observed} as `(method, route, status)`.
 */
import { AssertionError } from 'node:assert';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ALL_ROUTES } from '../../src/http/app.js';
import { openApiDocument } from '../../src/http/openapi.js';
import { stringifyJson } from '../../src/core/wire/json.js';
import { VERSION } from '../../src/version.js';

type Json = Record<string, any>;

// ajv-formats is CommonJS with a default export
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const DOC_ID = 'https://select-service.invalid/openapi.json';

/** The document as a client reads it: the served text through plain JSON.parse. */
export function openApiJson(prefix = ''): Json {
  return JSON.parse(stringifyJson(openApiDocument(ALL_ROUTES, VERSION, prefix))) as Json;
}

/**
 * An ajv for OpenAPI 3.1 documents: 2020-12, strict (an unknown keyword or format in a schema is
 * an error, not ignored), every error reported, the formats of the OpenAPI registry we use.
 */
export function openApiAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const int = (min: bigint, max: bigint) => ({ type: 'number' as const, validate: (n: number) => Number.isInteger(n) && n >= Number(min) && n <= Number(max) });
  ajv.addFormat('uint32', int(0n, 0xffffffffn));
  ajv.addFormat('int64', int(-(1n << 63n), (1n << 64n) - 1n)); // request hashes may also be written as u64
  ajv.addFormat('uint64', int(0n, (1n << 64n) - 1n));
  ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  // The document's top-level fields, so the whole document can be added as one schema and its
  // `#/components/schemas/...` references resolve inside it.
  ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'paths', 'components', 'jsonSchemaDialect', 'webhooks', 'security', 'externalDocs']);
  return ajv;
}

interface Operation { template: string; pattern: RegExp; methods: Map<string, Json> }

const pathPattern = (template: string): RegExp =>
  new RegExp(`^${template.split('/').map((seg) => (/^\{\w+\}$/.test(seg) ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`);

class Checker {
  readonly ajv = openApiAjv();
  readonly doc = openApiJson();
  readonly paths: Operation[];
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor() {
    this.ajv.addSchema(this.doc, DOC_ID);
    this.paths = Object.entries(this.doc.paths as Json).map(([template, ops]) => ({
      template, pattern: pathPattern(template), methods: new Map(Object.entries(ops as Json).map(([m, op]) => [m.toUpperCase(), op as Json])),
    }));
  }

  /** The validator of the schema at a JSON pointer of the document. */
  validator(pointer: string[]): ValidateFunction {
    const key = pointer.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    let v = this.compiled.get(key);
    if (!v) {
      v = this.ajv.getSchema(`${DOC_ID}#/${key}`);
      if (!v) throw new Error(`openapi-check: no schema at #/${key}`);
      this.compiled.set(key, v);
    }
    return v;
  }
}

let checker: Checker | null = null;

/** One checked response. */
export interface Observed { method: string; route: string; status: number }
/** Every response checked in this process, in order. */
export const observed: Observed[] = [];

/** A response as the helpers see it. */
export interface CheckedResponse {
  method: string;
  /** The request target as sent (path and query; percent-escapes kept). */
  url: string;
  status: number;
  contentType: string | null;
  text: string;
  allow?: string | null;
}

const fail = (r: CheckedResponse, why: string): never => {
  throw new AssertionError({ message: `OpenAPI: ${r.method} ${r.url} -> ${r.status}: ${why}\n  body: ${r.text.slice(0, 500)}` });
};

function validateBody(c: Checker, r: CheckedResponse, pointer: string[], content: Json): void {
  const base = (t: string): string => t.split(';')[0].trim().toLowerCase();
  const media = base(r.contentType ?? '');
  // documented media types may carry parameters (`text/plain; version=0.0.4`): compare the types
  const key = Object.keys(content).find((k) => base(k) === media);
  if (key === undefined) return fail(r, `media type ${JSON.stringify(media)} is not documented (${Object.keys(content).join(', ')})`);
  if (media !== 'application/json') return;
  let body: unknown;
  try { body = JSON.parse(r.text); } catch (err) { return fail(r, `the body is not JSON: ${(err as Error).message}`); }
  const v = c.validator([...pointer, 'content', key, 'schema']);
  if (!v(body)) fail(r, `the body does not match the documented schema:\n${c.ajv.errorsText(v.errors, { separator: '\n  ' })}`);
}

/** Checks one response against the document (see the file header); throws an AssertionError when it does not fit. */
export function checkResponse(r: CheckedResponse): void {
  const c = (checker ??= new Checker());
  const path = r.url.split('?')[0];
  const method = r.method.toUpperCase() === 'HEAD' ? 'GET' : r.method.toUpperCase();
  const errorPointer = ['components', 'schemas', 'Error'];
  const op = c.paths.find((p) => p.pattern.test(path));
  if (!op) {
    observed.push({ method, route: '(unknown)', status: r.status });
    if (r.status !== 404) fail(r, 'no documented path matches, so the answer must be 404');
    if (r.method.toUpperCase() !== 'HEAD' && !c.validator(errorPointer)(JSON.parse(r.text))) fail(r, 'a 404 body must be {"error": ...}');
    return;
  }
  const operation = op.methods.get(method);
  observed.push({ method, route: op.template, status: r.status });
  if (!operation) {
    // an empty path parameter (`/workers/`) is not a match of the template: 404
    if (r.status === 404 && /\/\/|\/$/.test(path)) return;
    if (r.status !== 405) fail(r, `${method} is not documented for ${op.template}, so the answer must be 405`);
    if (r.allow === undefined || r.allow === null || r.allow === '') fail(r, 'a 405 needs an Allow header');
    if (!c.validator(errorPointer)(JSON.parse(r.text))) fail(r, 'a 405 body must be {"error": ...}');
    return;
  }
  const response = (operation.responses as Json)[String(r.status)] as Json | undefined;
  if (!response) fail(r, `status ${r.status} is not documented for ${method} ${op.template} (documented: ${Object.keys(operation.responses as Json).join(', ')})`);
  if (r.method.toUpperCase() === 'HEAD') return;
  if (!response!.content) {
    if (r.text !== '') fail(r, 'the documented response has no body');
    return;
  }
  validateBody(c, r, ['paths', op.template, method.toLowerCase(), 'responses', String(r.status)], response!.content as Json);
}
