/**
 * JSON-RPC 2.0 messages as MCP uses them: zod schemas for what crosses the stdio and HTTP edges, a classifier
 * that turns one stdin line into typed messages (or the error to answer), and the error codes of the proxy.
 * Pure: no I/O.
 */

import * as z from "zod/mini";
import { isRecord, issueText } from "../lib/parsed.ts";

/** Error codes the proxy answers with. */
export const ErrorCode = {
  /** The line is not JSON. */
  ParseError: -32700,
  /** JSON, but not a JSON-RPC 2.0 message. */
  InvalidRequest: -32600,
  /** OpenViking refused the credentials (HTTP 401/403). */
  Authentication: -32001,
  /** OpenViking answered with an HTTP error status, a refused redirect, or a reply that is not JSON-RPC. */
  UpstreamHttp: -32002,
  /** OpenViking accepted the request but sent no response to it. */
  EmptyReply: -32003,
  /** OpenViking could not be reached (connection refused, DNS, TLS, timeout, a reply that went silent). */
  Network: -32004,
  /** OpenViking's reply was larger than the proxy reads. */
  ReplyTooLarge: -32005,
} as const;

/** A request or response id (MCP forbids null for requests). */
export type JsonRpcId = string | number;

const IdSchema = z.union([z.string(), z.number()]);
const ParamsSchema = z.optional(z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]));

/** A request: has `method` and `id`. Unknown members (e.g. `_meta`) are kept. */
const RequestSchema = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: IdSchema,
  method: z.string().check(z.minLength(1)),
  params: ParamsSchema,
});

/** A notification: has `method`, no `id`. */
const NotificationSchema = z.looseObject({
  jsonrpc: z.literal("2.0"),
  method: z.string().check(z.minLength(1)),
  params: ParamsSchema,
});

/** The `error` member of an error response. */
const ErrorObjectSchema = z.looseObject({
  code: z.int(),
  message: z.string(),
  data: z.optional(z.unknown()),
});

/** A success response. */
const ResultResponseSchema = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: IdSchema,
  result: z.unknown(),
});

/** An error response (`id` is null when the request could not be read). */
const ErrorResponseSchema = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.nullable(IdSchema),
  error: ErrorObjectSchema,
});

/** A JSON-RPC request. */
export type JsonRpcRequest = z.infer<typeof RequestSchema>;
/** A JSON-RPC notification. */
export type JsonRpcNotification = z.infer<typeof NotificationSchema>;
/** A JSON-RPC success response. */
export type JsonRpcResult = z.infer<typeof ResultResponseSchema>;
/** A JSON-RPC error response. */
export type JsonRpcErrorResponse = z.infer<typeof ErrorResponseSchema>;
/** A JSON-RPC response of either kind. */
export type JsonRpcResponse = JsonRpcResult | JsonRpcErrorResponse;
/** Any JSON-RPC message. */
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** A message with its kind, so callers never re-inspect its shape. */
export type Classified =
  | { kind: "request"; message: JsonRpcRequest }
  | { kind: "notification"; message: JsonRpcNotification }
  | { kind: "response"; message: JsonRpcResponse };

/** One stdin line, read. */
export type ParsedLine =
  /** A single message. */
  | { kind: "single"; item: Classified }
  /** A batch: each member classified, or the error response a broken member earns. */
  | { kind: "batch"; items: (Classified | JsonRpcErrorResponse)[] }
  /** Nothing to forward; answer with `reply`. */
  | { kind: "invalid"; reply: JsonRpcErrorResponse };

/** Builds an error response. */
export function errorResponse(
  id: JsonRpcId | null,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcErrorResponse {
  return {
    jsonrpc: "2.0",
    id,
    error: data === undefined ? { code, message } : { code, message, data },
  };
}

/** The id of a broken message, when it has a usable one (else null). */
function salvageId(value: unknown): JsonRpcId | null {
  if (!isRecord(value)) return null;
  const id = value.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** Classifies one decoded JSON value as a JSON-RPC message, or returns the error response it earns. */
function classify(value: unknown): Classified | JsonRpcErrorResponse {
  const invalid = (why: string) =>
    errorResponse(salvageId(value), ErrorCode.InvalidRequest, `Invalid Request: ${why}`);
  if (!isRecord(value)) return invalid("a JSON-RPC message must be an object");
  if (value.jsonrpc !== "2.0") return invalid('"jsonrpc" must be "2.0"');
  if ("method" in value) {
    if ("id" in value) {
      const parsed = RequestSchema.safeParse(value);
      return parsed.success
        ? { kind: "request", message: parsed.data }
        : invalid(describe(parsed.error, "request"));
    }
    const parsed = NotificationSchema.safeParse(value);
    return parsed.success
      ? { kind: "notification", message: parsed.data }
      : invalid(describe(parsed.error, "notification"));
  }
  if ("error" in value) {
    const parsed = ErrorResponseSchema.safeParse(value);
    return parsed.success
      ? { kind: "response", message: parsed.data }
      : invalid(describe(parsed.error, "error response"));
  }
  if ("result" in value) {
    const parsed = ResultResponseSchema.safeParse(value);
    return parsed.success
      ? { kind: "response", message: parsed.data }
      : invalid(describe(parsed.error, "response"));
  }
  return invalid('a message needs "method", "result" or "error"');
}

function describe(error: { issues: z.core.$ZodIssue[] }, what: string): string {
  const issue = error.issues[0];
  const where = issue?.path.length ? `"${issue.path.join(".")}"` : what;
  return `bad ${what}: ${where} ${issueText(issue)}`.replace(/\s+/g, " ");
}

/** Whether a classified item is an error response produced for a broken message. */
export function isErrorReply(item: Classified | JsonRpcErrorResponse): item is JsonRpcErrorResponse {
  return !("kind" in item);
}

/** Reads one stdin line: JSON parse, then JSON-RPC shape (single message or batch). */
export function parseLine(line: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return {
      kind: "invalid",
      reply: errorResponse(null, ErrorCode.ParseError, "Parse error: the line is not JSON"),
    };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) {
      return {
        kind: "invalid",
        reply: errorResponse(null, ErrorCode.InvalidRequest, "Invalid Request: empty batch"),
      };
    }
    return { kind: "batch", items: value.map(classify) };
  }
  const item = classify(value);
  return isErrorReply(item) ? { kind: "invalid", reply: item } : { kind: "single", item };
}

/** Classifies a message that arrived from the upstream server; `undefined` when it is not JSON-RPC. */
export function classifyUpstream(value: unknown): Classified | undefined {
  const item = classify(value);
  return isErrorReply(item) ? undefined : item;
}

/** Serialises a message (or batch) as one line without the newline; JSON never contains a raw newline. */
export function toLine(value: JsonRpcMessage | JsonRpcMessage[]): string {
  return JSON.stringify(value);
}
