/**
 * An OpenViking client that answers from a script instead of the network, for unit tests of the policies
 * above the client (recall's fallback chain, delivery, the profile).
 */

import type * as z from "zod/mini";
import {
  checkResult,
  type ClientOptions,
  failure,
  type FailureKind,
  type OpenVikingClient,
  type OvResponse,
  type RequestOptions,
} from "../../openviking/client.ts";

/** One request as the client was asked it. */
export interface Call {
  method: string;
  path: string;
  body?: unknown;
  query?: RequestOptions["query"];
  peerId?: string | null;
}

/** A scripted answer: OpenViking's "ok" with a result, or a failure of a kind. */
export type Answer = { result: unknown } | {
  fail: FailureKind;
  status: number;
  message?: string;
  details?: unknown;
};

/** OK with `result`. */
export const ok = (result: unknown): Answer => ({ result });

/** A failure of `kind` with HTTP `status`. */
export const fail = (kind: FailureKind, status: number, message = `HTTP ${status}`): Answer => ({
  fail: kind,
  status,
  message,
});

/** A client whose every request is answered by `script` (given the call and its number, from 0). */
export function scriptedClient(
  script: (call: Call, n: number) => Answer,
  options: Partial<ClientOptions> = {},
): { client: OpenVikingClient; calls: Call[] } {
  const calls: Call[] = [];
  const client: OpenVikingClient = {
    options: { baseUrl: "http://ov.test:1933", userAgent: "test", timeoutMs: 1000, ...options },
    request<S extends z.ZodMiniType>(
      method: string,
      path: string,
      schema: S,
      req: RequestOptions = {},
    ): Promise<OvResponse<z.output<S>>> {
      const call: Call = { method, path, body: req.body, query: req.query, peerId: req.peerId };
      const answer = script(call, calls.length);
      calls.push(call);
      if ("result" in answer) {
        return Promise.resolve(checkResult({ ok: true, status: 200, result: answer.result }, schema, path));
      }
      const error = { message: answer.message ?? `HTTP ${answer.status}`, details: answer.details };
      return Promise.resolve(failure(answer.fail, answer.status, error));
    },
  };
  return { client, calls };
}

/** The route of a call: `POST /api/v1/search/search`. */
export const route = (c: Call): string => `${c.method} ${c.path}`;
