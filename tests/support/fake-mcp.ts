/**
 * The fake OpenViking's `/mcp` endpoint: MCP Streamable HTTP with the server's 15 tools, JSON or SSE replies,
 * stateless (like OpenViking) or with session ids, and session expiry on demand.
 */

/** Options of the fake MCP endpoint. */
export interface FakeMcpOptions {
  /** Issue `Mcp-Session-Id` on initialize and require it afterwards. */
  stateful?: boolean;
  /** Reply to requests as an SSE stream instead of one JSON body. */
  sse?: boolean;
  /** Status used for an unknown session id (the spec says 404; some servers say 400). */
  expiredStatus?: 404 | 400;
}

/** A reply of the endpoint. */
export interface McpReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** OpenViking's MCP tool names. */
export const OPENVIKING_TOOLS = [
  "find",
  "search",
  "read",
  "list",
  "tree",
  "remember",
  "write",
  "edit",
  "add_resource",
  "list_watches",
  "cancel_watch",
  "grep",
  "glob",
  "forget",
  "health",
];

type Msg = Record<string, unknown>;

/** The fake endpoint's state and handler. */
export class FakeMcp {
  readonly sessions = new Set<string>();
  /** Every JSON-RPC message received, in order. */
  readonly received: Msg[] = [];
  deleted = 0;
  private next = 0;
  constructor(public options: FakeMcpOptions) {}

  /** Forgets every session (their ids now answer 404/400). */
  expireSessions(): void {
    this.sessions.clear();
  }

  /** Handles one HTTP request to /mcp. */
  handle(method: string, headers: Record<string, string>, body: unknown): Promise<McpReply> {
    return Promise.resolve(this.handleSync(method, headers, body));
  }

  private handleSync(method: string, headers: Record<string, string>, body: unknown): McpReply {
    const sid = headers["mcp-session-id"];
    if (method === "DELETE") {
      if (!this.options.stateful) return { status: 405, headers: {}, body: "" };
      if (sid && this.sessions.delete(sid)) this.deleted++;
      return { status: 200, headers: {}, body: "" };
    }
    if (method === "GET") return { status: 405, headers: {}, body: "" };
    if (method !== "POST") return { status: 405, headers: {}, body: "" };
    const accept = headers["accept"] ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
      return jsonReply(406, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Not Acceptable" } });
    }
    const messages = (Array.isArray(body) ? body : [body]) as Msg[];
    this.received.push(...messages);
    const isInit = messages.some((m) => m.method === "initialize");
    let newSession: string | undefined;
    if (this.options.stateful) {
      if (isInit) {
        newSession = `sess-${++this.next}`;
        this.sessions.add(newSession);
      } else if (!sid) {
        return jsonReply(400, {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32000, message: "Bad Request: No valid session ID provided" },
        });
      } else if (!this.sessions.has(sid)) {
        return jsonReply(this.options.expiredStatus ?? 404, {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32001, message: "Session not found" },
        });
      }
    }
    const requests = messages.filter((m) => m.id !== undefined && typeof m.method === "string");
    if (requests.length === 0) return { status: 202, headers: {}, body: "" };
    const replies = requests.map((m) => this.answer(m));
    const extra: Record<string, string> = newSession ? { "mcp-session-id": newSession } : {};
    if (this.options.sse) {
      const events = replies.map((r) => `event: message\ndata: ${JSON.stringify(r)}\n\n`).join("");
      return {
        status: 200,
        headers: { "content-type": "text/event-stream", ...extra },
        body: `: stream\n\n${events}`,
      };
    }
    const payload = Array.isArray(body) ? replies : replies[0];
    return {
      status: 200,
      headers: { "content-type": "application/json", ...extra },
      body: JSON.stringify(payload),
    };
  }

  private answer(m: Msg): Msg {
    const params = (m.params ?? {}) as Msg;
    switch (m.method) {
      case "initialize":
        return {
          jsonrpc: "2.0",
          id: m.id,
          result: {
            protocolVersion: typeof params.protocolVersion === "string"
              ? params.protocolVersion
              : "2025-06-18",
            capabilities: { tools: { listChanged: false } },
            serverInfo: { name: "openviking", version: "0.5.2-fake" },
          },
        };
      case "ping":
        return { jsonrpc: "2.0", id: m.id, result: {} };
      case "tools/list":
        return {
          jsonrpc: "2.0",
          id: m.id,
          result: {
            tools: OPENVIKING_TOOLS.map((name) => ({
              name,
              description: `OpenViking ${name}`,
              inputSchema: { type: "object", properties: {} },
            })),
          },
        };
      case "tools/call": {
        const name = String(params.name ?? "");
        if (!OPENVIKING_TOOLS.includes(name)) {
          return { jsonrpc: "2.0", id: m.id, error: { code: -32602, message: `Unknown tool: ${name}` } };
        }
        return {
          jsonrpc: "2.0",
          id: m.id,
          result: {
            content: [{ type: "text", text: `fake ${name}: ${JSON.stringify(params.arguments ?? {})}` }],
            isError: false,
          },
        };
      }
      default:
        return {
          jsonrpc: "2.0",
          id: m.id,
          error: { code: -32601, message: `Method not found: ${String(m.method)}` },
        };
    }
  }
}

function jsonReply(status: number, body: unknown): McpReply {
  return { status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}
