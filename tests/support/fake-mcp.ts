/** The fake OpenViking's `/mcp` endpoint. */

/** Options of the fake MCP endpoint. */
export interface FakeMcpOptions {
  /** Reply to requests as an SSE stream instead of one JSON body. */
  sse?: boolean;
}

/** A reply of the endpoint. */
interface McpReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** OpenViking 0.5.2's MCP tool names, in its order (its `/mcp` tools/list; kimi_real_openviking_test checks it). */
export const OPENVIKING_TOOLS = (
  "list_users list_groups get_acl set_acl privacy_tree privacy_resolve privacy_upsert find search read " +
  "download list tree remember write edit add_resource add_skill list_watches cancel_watch grep glob " +
  "forget health"
).split(" ");

/** The tools the proxy offers by default: what memory needs (search, read and browse, remember, forget). */
export const OFFERED_TOOLS = ["search", "read", "list", "remember", "grep", "glob", "forget"];

type Msg = Record<string, unknown>;

/** A scripted reply for one POST; return `undefined` to let the fake answer normally. */
type McpScript = (messages: Msg[], headers: Record<string, string>) => McpReply | undefined;

/** One SSE event of a scripted body. */
interface SseSpec {
  /** The JSON-RPC message (or raw text) of the event; split over several `data:` lines when `split` is set. */
  data?: unknown;
  /** Raw `data:` text instead of JSON (e.g. "[DONE]"). */
  raw?: string;
  event?: string;
  id?: string;
  /** Lines of comments before the event. */
  comment?: string;
  /** Split the JSON over this many `data:` lines. */
  split?: number;
}

/** Builds an SSE body from event specs (CRLF line ends when `crlf`). */
export function sseBody(events: SseSpec[], crlf = false): string {
  const nl = crlf ? "\r\n" : "\n";
  let out = "";
  for (const e of events) {
    if (e.comment !== undefined) out += `: ${e.comment}${nl}`;
    if (e.event) out += `event: ${e.event}${nl}`;
    if (e.id !== undefined) out += `id: ${e.id}${nl}`;
    const text = e.raw ?? (e.data === undefined ? undefined : JSON.stringify(e.data, null, e.split ? 1 : 0));
    if (text !== undefined) {
      const lines = e.split ? spread(text.split("\n"), e.split) : [text];
      for (const line of lines) out += `data: ${line}${nl}`;
    }
    if (e.data !== undefined || e.raw !== undefined) out += nl;
  }
  return out;
}

function spread(lines: string[], parts: number): string[] {
  const size = Math.max(1, Math.ceil(lines.length / parts));
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += size) out.push(lines.slice(i, i + size).join(" "));
  return out;
}

/** An SSE reply. */
export function sseReply(body: string, headers: Record<string, string> = {}): McpReply {
  return { status: 200, headers: { "content-type": "text/event-stream", ...headers }, body };
}

/** The fake endpoint's state and handler. */
export class FakeMcp {
  /** Every JSON-RPC message received, in order. */
  readonly received: Msg[] = [];
  /** Tool calls running now, and the most seen at once. */
  active = 0;
  maxActive = 0;
  /** When set, answers POSTs it returns a reply for. */
  script: McpScript | undefined;
  private readonly holds = new Map<string, { promise: Promise<void>; release: () => void }>();
  constructor(public options: FakeMcpOptions) {}

  /** Makes calls of tool `name` wait until `release()` is called. */
  hold(name: string): { release: () => void } {
    let release!: () => void;
    const promise = new Promise<void>((resolve) => {
      release = () => {
        this.holds.delete(name);
        resolve();
      };
    });
    this.holds.set(name, { promise, release });
    return { release };
  }

  /** Messages received with this method. */
  receivedMethod(method: string): Msg[] {
    return this.received.filter((m) => m.method === method);
  }

  /** Handles one HTTP request to /mcp. */
  async handle(method: string, headers: Record<string, string>, body: unknown): Promise<McpReply> {
    if (method === "POST" && this.script) {
      const messages = (Array.isArray(body) ? body : [body]) as Msg[];
      const scripted = this.script(messages, headers);
      if (scripted) {
        this.received.push(...messages);
        return scripted;
      }
    }
    const calls = (Array.isArray(body) ? body : [body]).filter((m) =>
      method === "POST" && (m as Msg)?.method === "tools/call"
    ) as Msg[];
    const held = calls.map((m) => this.holds.get(String((m.params as Msg | undefined)?.name ?? "")))
      .filter((h) => h !== undefined);
    this.active += calls.length;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      for (const h of held) await h.promise;
      return this.handleSync(method, headers, body);
    } finally {
      this.active -= calls.length;
    }
  }

  private handleSync(method: string, headers: Record<string, string>, body: unknown): McpReply {
    if (method !== "POST") return { status: 405, headers: {}, body: "" };
    const accept = headers["accept"] ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
      return rpcError(406, -32600, "Not Acceptable");
    }
    const messages = (Array.isArray(body) ? body : [body]) as Msg[];
    this.received.push(...messages);
    const requests = messages.filter((m) => m.id !== undefined && typeof m.method === "string");
    if (requests.length === 0) return { status: 202, headers: {}, body: "" };
    const replies = requests.map((m) => this.answer(m));
    const events = replies.map((r) => `event: message\ndata: ${JSON.stringify(r)}\n\n`).join("");
    if (this.options.sse) return sseReply(`: stream\n\n${events}`);
    return jsonReply(200, Array.isArray(body) ? replies : replies[0]);
  }

  private answer(m: Msg): Msg {
    const params = (m.params ?? {}) as Msg;
    const reply = (what: Msg) => ({ jsonrpc: "2.0", id: m.id, ...what });
    const name = String(params.name ?? "");
    switch (m.method) {
      case "initialize": {
        const asked = params.protocolVersion;
        const protocolVersion = typeof asked === "string" ? asked : "2025-06-18";
        const serverInfo = { name: "openviking", version: "0.5.2-fake" };
        return reply({
          result: { protocolVersion, capabilities: { tools: { listChanged: false } }, serverInfo },
        });
      }
      case "ping":
        return reply({ result: {} });
      case "tools/list": {
        const tool = (name: string) => ({
          name,
          description: `OpenViking ${name}`,
          inputSchema: { type: "object", properties: {} },
        });
        return reply({ result: { tools: OPENVIKING_TOOLS.map(tool) } });
      }
      case "tools/call": {
        if (!OPENVIKING_TOOLS.includes(name)) {
          return reply({ error: { code: -32602, message: `Unknown tool: ${name}` } });
        }
        const text = `fake ${name}: ${JSON.stringify(params.arguments ?? {})}`;
        return reply({ result: { content: [{ type: "text", text }], isError: false } });
      }
      default:
        return reply({ error: { code: -32601, message: `Method not found: ${String(m.method)}` } });
    }
  }
}

/** A JSON-RPC error with no id, answered with HTTP `status`. */
function rpcError(status: number, code: number, message: string): McpReply {
  return jsonReply(status, { jsonrpc: "2.0", id: null, error: { code, message } });
}

function jsonReply(status: number, body: unknown): McpReply {
  return { status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

/**
 * A misbehaving reply: its content type, first bytes, and what it writes at each 50 ms tick (`end`: last);
 * "hang": no reply at all, like a stopped server that accepts connections.
 */
type Misbehaviour =
  | { sse: boolean; head: string; tick: (n: number) => string | { end: string } }
  | "hang";

/**
 * The fake /mcp alone on Deno.serve (no node:http, so a client that goes away mid-reply is no error), where
 * calls of the tools in `rows` get a reply that misbehaves over time; it counts the bodies the proxy cancelled
 * (so a connection left open shows). Other requests: the fake's answer.
 */
export function serveFakeMcp(rows: Record<string, Misbehaviour> = {}) {
  const mcp = new FakeMcp({});
  const encoder = new TextEncoder();
  const open = new Set<() => void>();
  const counts = { started: 0, cancelled: 0 };
  const misbehave = (row: Misbehaviour): Response | Promise<Response> => {
    if (row === "hang") {
      return new Promise((answer) => open.add(() => answer(new Response(null, { status: 503 }))));
    }
    const { sse, head, tick } = row;
    counts.started++;
    let timer: ReturnType<typeof setInterval>;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const end = () => {
          clearInterval(timer);
          open.delete(end);
          controller.error(new Error("shut down"));
        };
        open.add(end);
        controller.enqueue(encoder.encode(head));
        let n = 0;
        timer = setInterval(() => {
          const out = tick(++n);
          if (typeof out === "string") return out && controller.enqueue(encoder.encode(out));
          clearInterval(timer);
          open.delete(end);
          controller.enqueue(encoder.encode(out.end));
          controller.close();
        }, 50);
      },
      cancel: () => {
        clearInterval(timer);
        counts.cancelled++;
      },
    });
    return new Response(body, {
      headers: { "content-type": sse ? "text/event-stream" : "application/json" },
    });
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = req.method === "POST" ? await req.json() as Msg : undefined;
    const row = body?.method === "tools/call" ? rows[String((body.params as Msg).name)] : undefined;
    if (row) return misbehave(row);
    const reply = await mcp.handle(req.method, Object.fromEntries(req.headers), body);
    return new Response(reply.status === 202 || !reply.body ? null : reply.body, reply);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    counts,
    async [Symbol.asyncDispose]() {
      for (const end of [...open]) end();
      await server.shutdown();
    },
  };
}
