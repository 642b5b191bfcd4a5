/**
 * What a failure means for the user and what to do about it: one sentence per failure kind, used by doctor,
 * replay and status. Pure.
 */

import type { OvFailure } from "./reply.ts";

/** A failure told to a person: what happened and the fix. */
export interface Advice {
  summary: string;
  fix: string;
}

/**
 * The advice for a recorded cause — a failure kind, or "local" (our own state or queue could not be
 * written) — as capture states and the ledger keep it.
 */
export function adviceForCause(
  cause: { kind: OvFailure["kind"] | "local"; status: number; message: string },
  baseUrl: string,
): Advice {
  if (cause.kind === "local") {
    return { summary: cause.message, fix: "free disk space or fix the permissions of ~/.openviking" };
  }
  return adviceFor({ kind: cause.kind, status: cause.status, error: { message: cause.message } }, baseUrl);
}

/** The advice for a failure seen while talking to `baseUrl`. */
export function adviceFor(
  f: Pick<OvFailure, "kind" | "status" | "error" | "location">,
  baseUrl: string,
): Advice {
  switch (f.kind) {
    case "redirect":
      return {
        summary: `${baseUrl} redirects${f.location ? ` to ${f.location}` : ""} (HTTP ${f.status}); ` +
          "requests are not sent on, so the key never leaves for another address",
        fix: f.location
          ? `save the address it redirects to: \`openviking-kimi install --url ${
            new URL(f.location).origin
          }\``
          : "save the server's real address with `openviking-kimi install --url URL`",
      };
    case "not-openviking":
      return {
        summary: `${baseUrl} is not an OpenViking server: ${f.error.message}`,
        fix: "check the address and path (a reverse proxy must forward /api/v1 to OpenViking), then " +
          "`openviking-kimi install --url URL`; writes wait in the queue until then",
      };
    case "missing-route":
      return {
        summary:
          `the OpenViking server at ${baseUrl} has no such route (HTTP ${f.status}): ${f.error.message}`,
        fix: "upgrade OpenViking (0.5 or newer); writes wait in the queue until then",
      };
    case "auth":
      return {
        summary: `the server refused the key (HTTP ${f.status}): ${f.error.message}`,
        fix: "save a valid key: `openviking-kimi install --api-key-stdin` (or OPENVIKING_API_KEY), and " +
          "--account/--user when the server runs in trusted mode; writes wait in the queue until then",
      };
    case "server":
      return {
        summary: `OpenViking at ${baseUrl} cannot take requests now (HTTP ${f.status}): ${f.error.message}`,
        fix: "check the server's log; writes wait in the queue and are sent when it recovers",
      };
    case "too-large":
      return {
        summary: `${baseUrl} sent a reply larger than this plugin reads: ${f.error.message}`,
        fix:
          "check what answers at that address (a proxy's error page?); lower OPENVIKING_RECALL_LIMIT for recall",
      };
    case "rejected":
      return {
        summary: `OpenViking refused the request (HTTP ${f.status}): ${f.error.message}`,
        fix: "this message was dropped; if it keeps happening, report it with the server's log",
      };
    case "unreachable":
      return {
        summary: `OpenViking at ${baseUrl} is not reachable: ${f.error.message}`,
        fix: 'start the server (README: "No server yet?"), or save its address: ' +
          "`openviking-kimi install --url http://HOST:1933`; writes wait in the queue until then",
      };
  }
}
