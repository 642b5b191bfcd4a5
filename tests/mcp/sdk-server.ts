/**
 * A real peer for the proxy: the official MCP TypeScript SDK's Streamable HTTP server (McpServer +
 * WebStandardStreamableHTTPServerTransport) on 127.0.0.1 via Deno.serve — stateful or stateless, SSE or JSON
 * replies — with tools that echo and stream log notifications.
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

/** Modes of the SDK server. */
export interface SdkServerOptions {
  /** Issue session ids (the SDK's stateful mode). */
  stateful: boolean;
  /** Answer with JSON bodies instead of SSE streams. */
  json: boolean;
  /** Require this bearer token. */
  apiKey?: string;
  port?: number;
}

/** What the server saw of one HTTP request. */
export interface SeenRequest {
  method: string;
  rpc?: string;
  sessionId: string | null;
  protocolVersion: string | null;
  authorization: string | null;
}

type Transport = WebStandardStreamableHTTPServerTransport;

/** A running SDK server. */
export class SdkServer {
  readonly seen: SeenRequest[] = [];
  /** Sessions ended by DELETE. */
  deleted = 0;
  private readonly sessions = new Map<string, Transport>();
  private server!: Deno.HttpServer<Deno.NetAddr>;
  port = 0;

  private constructor(readonly options: SdkServerOptions) {}

  /** Starts a server (a free port unless `options.port`). */
  static start(options: SdkServerOptions): SdkServer {
    const s = new SdkServer(options);
    s.listen(options.port ?? 0);
    return s;
  }

  /** The base URL (OPENVIKING_URL); the endpoint is `<url>/mcp`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private listen(port: number): void {
    this.server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, (req) => this.handle(req));
    this.port = this.server.addr.port;
  }

  private async expireSessions(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const t of all) await t.close().catch(() => {});
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.expireSessions();
    await this.server.shutdown();
  }

  private newMcpServer(): McpServer {
    const server = new McpServer({ name: "sdk-peer", version: "1.0.0" }, { capabilities: { logging: {} } });
    server.registerTool("echo", {
      description: "Echo the text back",
      inputSchema: { text: z.string() },
    }, ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }));
    server.registerTool("chatty", {
      description: "Sends log notifications before its result",
      inputSchema: { count: z.number().int() },
    }, async ({ count }, extra) => {
      for (let i = 0; i < count; i++) {
        await extra.sendNotification({
          method: "notifications/message",
          params: { level: "info", data: `step ${i}` },
        });
      }
      return { content: [{ type: "text", text: `done after ${count}` }] };
    });
    return server;
  }

  private async transportFor(sessionId: string | null, isInit: boolean): Promise<Transport | Response> {
    const { stateful, json } = this.options;
    if (!stateful) {
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: json,
      });
      await this.newMcpServer().connect(transport);
      return transport;
    }
    if (sessionId) {
      const known = this.sessions.get(sessionId);
      if (known) return known;
      return Response.json(
        { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } },
        { status: 404 },
      );
    }
    if (!isInit) {
      return Response.json(
        {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32000, message: "Bad Request: No valid session ID provided" },
        },
        { status: 400 },
      );
    }
    const transport: Transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (id) => {
        this.sessions.set(id, transport);
      },
      onsessionclosed: (id) => {
        this.deleted++;
        this.sessions.delete(id);
      },
    });
    await this.newMcpServer().connect(transport);
    return transport;
  }

  private async handle(req: Request): Promise<Response> {
    const sessionId = req.headers.get("mcp-session-id");
    let body: unknown = undefined;
    if (req.method === "POST") body = await req.json().catch(() => undefined);
    const first = (Array.isArray(body) ? body[0] : body) as Record<string, unknown> | undefined;
    this.seen.push({
      method: req.method,
      rpc: typeof first?.method === "string" ? first.method : undefined,
      sessionId,
      protocolVersion: req.headers.get("mcp-protocol-version"),
      authorization: req.headers.get("authorization"),
    });
    if (this.options.apiKey && req.headers.get("authorization") !== `Bearer ${this.options.apiKey}`) {
      return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }, {
        status: 401,
      });
    }
    const transport = await this.transportFor(sessionId, first?.method === "initialize");
    if (transport instanceof Response) return transport;
    return await transport.handleRequest(req, body === undefined ? undefined : { parsedBody: body });
  }
}
