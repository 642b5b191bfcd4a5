/**
 * A real peer for the proxy: the official MCP TypeScript SDK's Streamable HTTP server (McpServer +
 * WebStandardStreamableHTTPServerTransport) on 127.0.0.1 via Deno.serve, stateless like OpenViking 0.5's,
 * SSE or JSON replies — with tools that echo and stream log notifications.
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

/** Modes of the SDK server. */
export interface SdkServerOptions {
  /** Answer with JSON bodies instead of SSE streams. */
  json: boolean;
  /** Require this bearer token. */
  apiKey?: string;
}

/** What the server saw of one HTTP request. */
export interface SeenRequest {
  method: string;
  rpc?: string;
  sessionId: string | null;
  protocolVersion: string | null;
  authorization: string | null;
}

/** A running SDK server. */
export class SdkServer {
  readonly seen: SeenRequest[] = [];
  private readonly server: Deno.HttpServer<Deno.NetAddr>;

  private constructor(readonly options: SdkServerOptions) {
    this.server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => this.handle(req));
  }

  /** Starts a server on a free port. */
  static start(options: SdkServerOptions): SdkServer {
    return new SdkServer(options);
  }

  /** The base URL (OPENVIKING_URL); the endpoint is `<url>/mcp`. */
  get url(): string {
    return `http://127.0.0.1:${this.server.addr.port}`;
  }

  /** Stops the server. */
  async close(): Promise<void> {
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

  private async handle(req: Request): Promise<Response> {
    let body: unknown = undefined;
    if (req.method === "POST") body = await req.json().catch(() => undefined);
    const first = (Array.isArray(body) ? body[0] : body) as Record<string, unknown> | undefined;
    this.seen.push({
      method: req.method,
      rpc: typeof first?.method === "string" ? first.method : undefined,
      sessionId: req.headers.get("mcp-session-id"),
      protocolVersion: req.headers.get("mcp-protocol-version"),
      authorization: req.headers.get("authorization"),
    });
    if (this.options.apiKey && req.headers.get("authorization") !== `Bearer ${this.options.apiKey}`) {
      return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }, {
        status: 401,
      });
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: this.options.json,
    });
    await this.newMcpServer().connect(transport);
    return await transport.handleRequest(req, body === undefined ? undefined : { parsedBody: body });
  }
}
