/**
 * What the proxy answers by itself while OpenViking cannot be reached, so Kimi Code keeps the server (and its
 * tools) for the session: an `initialize` result, a `tools/list` result from the cached or built-in catalog,
 * and the empty `ping` result (which the proxy always answers itself). Pure.
 */

import { VERSION } from "../lib/version.ts";
import type { ToolDefinition } from "../memory/tools.ts";
import type { JsonRpcId, JsonRpcResult } from "./jsonrpc.ts";
import { DEFAULT_PROTOCOL_VERSION, type Failure } from "./upstream.ts";

/** Protocol versions the proxy can relay (the message shapes of tools and ping are the same in all). */
const KNOWN_PROTOCOL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] as const;

/**
 * The version to answer an offline `initialize` with: the client's own ask when it is a known version no newer
 * than the one OpenViking speaks (2025-06-18), else 2025-06-18. When the server comes back it is initialised
 * asking for this same version, so the client and the server end up agreeing.
 */
export function offlineProtocolVersion(requested: unknown): string {
  if (
    typeof requested === "string" &&
    (KNOWN_PROTOCOL_VERSIONS as readonly string[]).includes(requested) &&
    requested <= DEFAULT_PROTOCOL_VERSION
  ) {
    return requested;
  }
  return DEFAULT_PROTOCOL_VERSION;
}

/** Why the server could not answer `initialize`, in words for the instructions ("was not reachable", …). */
export function offlineReason(failure: Failure): string {
  switch (failure.kind) {
    case "auth":
      return `refused the credentials (HTTP ${failure.status})`;
    case "http":
    case "empty":
    case "bad-reply":
    case "redirect":
      return `answered HTTP ${failure.status} instead of an MCP result`;
    case "too-large":
      return "sent a reply larger than the proxy reads";
    case "stalled":
    case "deadline":
      return "did not finish its reply in time";
    default:
      return "was not reachable";
  }
}

/** The `initialize` result given while the server cannot answer (`reason` from {@link offlineReason}). */
export function offlineInitializeResult(
  id: JsonRpcId,
  requestedVersion: unknown,
  url: string,
  reason = "was not reachable",
): JsonRpcResult {
  return {
    jsonrpc: "2.0",
    id,
    result: {
      protocolVersion: offlineProtocolVersion(requestedVersion),
      capabilities: { tools: { listChanged: true } },
      serverInfo: {
        name: "openviking",
        title: "OpenViking (via openviking-kimi)",
        version: `proxy-${VERSION}`,
      },
      instructions: `OpenViking at ${url} ${reason} when this session started. Its tools are listed ` +
        `anyway and work as soon as the server answers; until then they return an error that says why.`,
    },
  };
}

/** The `tools/list` result served from a catalog. */
export function catalogResult(id: JsonRpcId, tools: readonly ToolDefinition[]): JsonRpcResult {
  return { jsonrpc: "2.0", id, result: { tools } };
}

/** The `ping` result. */
export function pingResult(id: JsonRpcId): JsonRpcResult {
  return { jsonrpc: "2.0", id, result: {} };
}

/** The notification telling the client to fetch the tool list again. */
export const TOOLS_CHANGED = { jsonrpc: "2.0" as const, method: "notifications/tools/list_changed" };
