/**
 * A misbehaving MCP server for the proxy's time bounds: the fake's /mcp (tests/support/fake-mcp.ts) on
 * Deno.serve, where calls of chosen tools get a reply that misbehaves over time — headers and then silence,
 * SSE keep-alive comments for a while or forever. It counts the reply bodies the client gave up on (cancelled),
 * which shows the proxy closed the connection rather than leaving it open.
 */

import { FakeMcp, type FakeMcpOptions } from "../support/fake-mcp.ts";

type Msg = Record<string, unknown>;

/** How the reply to a call of one tool misbehaves. */
export type Misbehaviour =
  /** Headers (JSON or SSE), the start of a body, then nothing. */
  | { kind: "stall"; sse: boolean }
  /** An SSE stream of `: keep-alive` comments every `everyMs`, `times` times (forever when absent), then the result. */
  | { kind: "keep-alive"; everyMs: number; times?: number };

const encoder = new TextEncoder();

/** The fake /mcp on its own port, with misbehaving tools. */
export class HostileMcp implements AsyncDisposable {
  readonly mcp: FakeMcp;
  /** Misbehaviour per tool name. */
  readonly tools = new Map<string, Misbehaviour>();
  /** Misbehaving replies started, and those whose body the client cancelled. */
  started = 0;
  cancelled = 0;
  /** Once set, stalled replies write a byte every 50 ms, so a connection the proxy closed is seen at once. */
  probing = false;
  /** Ends each reply still open (so shutdown does not wait for them). */
  private readonly open = new Set<() => void>();
  private readonly server: Deno.HttpServer<Deno.NetAddr>;

  constructor(options: FakeMcpOptions = {}) {
    this.mcp = new FakeMcp(options);
    this.server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => this.handle(req));
  }

  /** The base URL (OPENVIKING_URL). */
  get url(): string {
    return `http://127.0.0.1:${this.server.addr.port}`;
  }

  private async handle(req: Request): Promise<Response> {
    const text = req.method === "POST" ? await req.text() : "";
    const body = text ? JSON.parse(text) as unknown : undefined;
    const first = (Array.isArray(body) ? body[0] : body) as Msg | undefined;
    const tool = first?.method === "tools/call" ? String((first.params as Msg)?.name ?? "") : "";
    const misbehaviour = this.tools.get(tool);
    if (misbehaviour) {
      this.mcp.received.push(first!);
      return this.misbehave(misbehaviour, first!.id);
    }
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => headers[k] = v);
    const reply = await this.mcp.handle(req.method, headers, body);
    return new Response(reply.status === 202 || reply.body === "" ? null : reply.body, {
      status: reply.status,
      headers: reply.headers,
    });
  }

  private misbehave(how: Misbehaviour, id: unknown): Response {
    this.started++;
    const sse = how.kind === "keep-alive" || how.sse;
    let timer: ReturnType<typeof setInterval> | undefined;
    let end: () => void = () => {};
    const stop = () => {
      clearInterval(timer);
      this.open.delete(end);
    };
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        end = () => {
          stop();
          controller.error(new Error("server shut down"));
        };
        this.open.add(end);
        if (how.kind === "stall") {
          controller.enqueue(encoder.encode(how.sse ? ": open\n\n" : '{"jsonrpc":"2.0",'));
          // A server sees a closed connection when it writes: silent until the test asks, then probing.
          timer = setInterval(
            () => this.probing && controller.enqueue(encoder.encode(how.sse ? ":\n" : " ")),
            50,
          );
          return;
        }
        let sent = 0;
        timer = setInterval(() => {
          if (how.times === undefined || sent < how.times) {
            sent++;
            controller.enqueue(encoder.encode(": keep-alive\n\n"));
            return;
          }
          stop();
          const result = { content: [{ type: "text", text: `after ${sent} keep-alives` }] };
          controller.enqueue(encoder.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n`));
          controller.close();
        }, how.everyMs);
      },
      cancel: () => {
        stop();
        this.cancelled++;
      },
    });
    return new Response(body, {
      headers: { "content-type": sse ? "text/event-stream" : "application/json" },
    });
  }

  /** Stops the server (open replies are cut). */
  async [Symbol.asyncDispose](): Promise<void> {
    for (const end of [...this.open]) end();
    await this.server.shutdown();
  }
}
