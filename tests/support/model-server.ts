/** A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for driving the real Kimi Code CLI. */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { concatBytes } from "../../lib/bytes.ts";
import { waitUntil } from "./kimi.ts";

/** A tool call as the model emits it (`args` sent JSON-encoded; `id` default `call_<n>`). */
interface ToolCallSpec {
  name: string;
  args: Record<string, unknown>;
  id?: string;
}

/**
 * What the scripted model answers to one request: a text (its `reasoning` sent first; streamed `chunkSize`
 * characters at a time, `intervalMs` apart: a slow stream a test can interrupt), tool calls (text before them),
 * or an HTTP error in the OpenAI envelope.
 */
export type Reply =
  | { kind: "text"; text: string; reasoning?: string; chunkSize?: number; intervalMs?: number }
  | { kind: "tool"; calls: ToolCallSpec[]; text?: string }
  | { kind: "error"; status: number; message: string };

/** A chat message as Kimi sends it (OpenAI format). */
export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string; [k: string]: unknown }> | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [k: string]: unknown;
}

/** The body of a chat completions request (the fields the server looks at; the rest is kept). */
interface ChatBody {
  model?: string;
  stream?: boolean;
  messages: ChatMessage[];
  tools?: Array<{ type: string; function: { name: string; [k: string]: unknown } }>;
  [k: string]: unknown;
}

/** Any HTTP request the server saw; `body` parsed JSON (the raw text if it was not JSON, null when empty). */
interface RecordedRequest {
  seq: number;
  method: string;
  path: string;
  body: unknown;
}

/**
 * A chat completions request as scripts read it: `seq` among all requests, `n` among chat requests (from 1),
 * the system message(s)' text, the user texts of the current turn (after the last plain assistant answer),
 * the prompt (the last of them that is not an injected block: reminders and hook results start with "<"; ""
 * if none), whether a tool message follows the turn's last tool call, the turn's last tool output, the
 * offered tools' names.
 */
export interface ChatRequest {
  seq: number;
  n: number;
  body: ChatBody;
  system: string;
  turnUserTexts: string[];
  prompt: string;
  hasToolResult: boolean;
  lastToolOutput: string | undefined;
  toolNames: string[];
}

/** Decides the reply to one chat request. */
export type Script = (req: ChatRequest) => Reply | Promise<Reply>;

/** The marker the default script puts into a subagent's task prompt. */
const SUBAGENT_MARKER = "SUBAGENT_TASK";

/** Text of an OpenAI message content (string or parts). */
export function messageText(m: ChatMessage): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p.text === "string" ? p.text : "")).join("\n");
  return "";
}

function describeChat(body: ChatBody, seq: number, n: number): ChatRequest {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  const calls = (m: ChatMessage) => m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0;
  const turn = msgs.slice(msgs.findLastIndex((m) => m.role === "assistant" && !calls(m)) + 1);
  const turnUserTexts = turn.filter((m) => m.role === "user").map(messageText);
  const lastCall = turn.findLastIndex(calls);
  const toolMsgs = turn.filter((m, i) => m.role === "tool" && i > lastCall && lastCall >= 0);
  const lastTool = turn.filter((m) => m.role === "tool").at(-1);
  return {
    seq,
    n,
    body,
    system: msgs.filter((m) => m.role === "system").map(messageText).join("\n"),
    turnUserTexts,
    prompt: turnUserTexts.filter((t) => !t.trimStart().startsWith("<")).at(-1) ?? "",
    hasToolResult: toolMsgs.length > 0,
    lastToolOutput: lastTool ? messageText(lastTool) : undefined,
    toolNames: (body.tools ?? []).map((t) => t.function?.name).filter((x): x is string => !!x),
  };
}

/** The default script. */
export const defaultScript: Script = (req) => {
  const prompt = req.prompt;
  const reasoning = prompt.includes("THINK") ? "pondering the request" : undefined;
  if (isCompaction(req)) {
    return { kind: "text", text: "SUMMARY: the user said hello; the assistant acknowledged." };
  }
  if (prompt.includes("FAIL")) return { kind: "error", status: 400, message: "mock request rejected" };
  if (isSubagent(req)) return { kind: "text", text: "SUBAGENT-DONE" };
  if (prompt.includes("RUN_AGENT")) {
    if (!req.hasToolResult) {
      return {
        kind: "tool",
        calls: [{
          name: "Agent",
          args: { description: "sub task", prompt: `${SUBAGENT_MARKER}: reply with SUBAGENT-DONE` },
        }],
      };
    }
    return { kind: "text", text: `FINAL after agent: ${firstLine(req.lastToolOutput)}`, reasoning };
  }
  if (prompt.includes("RUN_TOOL")) {
    if (!req.hasToolResult) {
      return { kind: "tool", calls: [{ name: "Bash", args: { command: "echo tool-ran" } }] };
    }
    return { kind: "text", text: `FINAL after tool: ${firstLine(req.lastToolOutput)}`, reasoning };
  }
  if (prompt.includes("SLOW")) {
    const text = Array.from({ length: 200 }, (_, i) => `slow token ${i + 1}`).join(" ");
    return { kind: "text", text, chunkSize: 13, intervalMs: 100 };
  }
  return { kind: "text", text: `ACK ${req.n}: ${prompt.slice(0, 60)}`, reasoning };
};

/** The first lines of a tool output, without Kimi's volatile "Wall time: …" line. */
function firstLine(s: string | undefined): string {
  return (s ?? "").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("Wall time:"))
    .slice(0, 2).join(" | ").slice(0, 80);
}

/** Whether a request is Kimi's context-compaction call (last user message asks for a handoff summary). */
export function isCompaction(req: ChatRequest): boolean {
  const last = req.body.messages.at(-1);
  const lastText = last && last.role === "user" ? messageText(last) : "";
  return /run out of context|handoff summary|summar(y|ize) (of )?the conversation/i.test(lastText);
}

/** Whether a request comes from a subagent (its system prompt says so, or its task carries the marker). */
export function isSubagent(req: ChatRequest): boolean {
  if (/running as a subagent/i.test(req.system)) return true;
  const text = req.turnUserTexts.join("\n");
  return text.includes(SUBAGENT_MARKER) && !text.includes("RUN_AGENT");
}

/** Options of {@link ModelServer.start}: the model id it reports (default "fake-model"), `POST /v1/embeddings`'s answer (404 without). */
interface ModelOptions {
  model?: string;
  embed?: (body: Record<string, unknown>) => unknown;
}

/** A scripted OpenAI-compatible model server. */
export class ModelServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  readonly #model: string;
  readonly #queue: Reply[] = [];
  readonly #open = new Set<ServerResponse>();
  readonly #embed: ((body: Record<string, unknown>) => unknown) | undefined;
  #script: Script = defaultScript;
  #chatCount = 0;
  #toolCallCount = 0;

  private constructor(server: Server, opts: ModelOptions) {
    this.#server = server;
    this.#model = opts.model ?? "fake-model";
    this.#embed = opts.embed;
  }

  /** Starts a server (default script) on 127.0.0.1. */
  static async start(script?: Script, opts: ModelOptions = {}): Promise<ModelServer> {
    const server = createServer();
    const ms = new ModelServer(server, opts);
    if (script) ms.#script = script;
    server.on("request", (req, res) => void ms.#handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return ms;
  }

  /** The port the server listens on. */
  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** The OpenAI base URL to configure in Kimi (`http://127.0.0.1:<port>/v1`). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Queues replies used (first in, first out) before the script is consulted. */
  enqueue(...replies: Reply[]): void {
    this.#queue.push(...replies);
  }

  /** The recorded chat completions requests, as {@link ChatRequest} views. */
  chatRequests(): ChatRequest[] {
    let n = 0;
    return this.requests
      .filter((r) => r.method === "POST" && r.path.endsWith("/chat/completions") && isChatBody(r.body))
      .map((r) => describeChat(r.body as ChatBody, r.seq, ++n));
  }

  /** Resolves with the first chat request matching `pred` (already received or future). */
  waitForChat(pred: (r: ChatRequest) => boolean = () => true, timeoutMs = 30_000): Promise<ChatRequest> {
    return waitUntil(() => this.chatRequests().find(pred), timeoutMs, "a matching chat request", 50);
  }

  /** Stops the server, ending open streams. */
  async close(): Promise<void> {
    for (const res of this.#open) res.destroy();
    this.#open.clear();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections?.();
    await closed;
  }

  /** Closes the server at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Uint8Array[] = [];
    for await (const c of req) chunks.push(c as Uint8Array);
    const raw = new TextDecoder().decode(concatBytes(chunks));
    let body: unknown = null;
    if (raw !== "") {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    const rec: RecordedRequest = { seq: this.requests.length + 1, method: req.method ?? "GET", path, body };
    this.requests.push(rec);

    try {
      if (rec.method === "GET" && /\/models\/?$/.test(rec.path)) {
        return json(res, 200, {
          object: "list",
          data: [{ id: this.#model, object: "model", created: 0, owned_by: "fake" }],
        });
      }
      if (rec.method === "POST" && rec.path.endsWith("/chat/completions")) {
        if (!isChatBody(body)) return json(res, 400, errorBody("messages missing"));
        const n = ++this.#chatCount;
        const view = describeChat(body, rec.seq, n);
        const reply = this.#queue.shift() ?? await this.#script(view);
        return await this.#answer(res, body, reply, n);
      }
      if (rec.method === "POST" && rec.path.endsWith("/embeddings") && this.#embed && isObject(body)) {
        return json(res, 200, this.#embed(body));
      }
      return json(res, 404, errorBody(`no route ${rec.method} ${rec.path}`));
    } catch (e) {
      if (!res.headersSent) json(res, 500, errorBody(String(e)));
      else res.destroy();
    }
  }

  async #answer(res: ServerResponse, body: ChatBody, reply: Reply, n: number): Promise<void> {
    if (reply.kind === "error") return json(res, reply.status, errorBody(reply.message));
    this.#open.add(res);
    res.on("close", () => this.#open.delete(res));
    const id = `chatcmpl-${n}`;
    const created = Math.floor(Date.now() / 1000);
    const calls = reply.kind === "tool"
      ? reply.calls.map((c) => ({ ...c, id: c.id ?? `call_${++this.#toolCallCount}` }))
      : [];
    const text = reply.text ?? "";
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    const finish = calls.length > 0 ? "tool_calls" : "stop";
    const reasoning = reply.kind === "text" ? reply.reasoning : undefined;
    const toolCalls = calls.map((c, index) => ({
      index,
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
    const head = { id, created, model: this.#model };
    if (body.stream !== true) {
      const message = {
        role: "assistant",
        content: text === "" ? null : text,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length > 0 ? { tool_calls: toolCalls.map(({ index: _, ...c }) => c) } : {}),
      };
      const choices = [{ index: 0, message, finish_reason: finish }];
      return json(res, 200, { ...head, object: "chat.completion", choices, usage });
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const send = (delta: Record<string, unknown>, finishReason: string | null, extra = {}) => {
      if (res.destroyed) return false;
      const choices = [{ index: 0, delta, finish_reason: finishReason }];
      res.write(
        `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices, ...extra })}\n\n`,
      );
      return true;
    };
    if (!send({ role: "assistant", content: "" }, null)) return;
    if (reasoning) send({ reasoning_content: reasoning }, null);
    const size = reply.kind === "text" && reply.chunkSize ? reply.chunkSize : Math.max(text.length, 1);
    const interval = reply.kind === "text" ? reply.intervalMs ?? 0 : 0;
    for (let i = 0; i < text.length; i += size) {
      if (interval > 0 && i > 0) await sleep(interval);
      if (!send({ content: text.slice(i, i + size) }, null)) return;
    }
    for (const call of toolCalls) send({ tool_calls: [call] }, null);
    if (!send({}, finish, { usage })) return;
    res.end("data: [DONE]\n\n");
  }
}

function isObject(b: unknown): b is Record<string, unknown> {
  return typeof b === "object" && b !== null && !Array.isArray(b);
}

function isChatBody(b: unknown): b is ChatBody {
  return isObject(b) && Array.isArray(b.messages);
}

function errorBody(message: string) {
  return { error: { message, type: "invalid_request_error", param: null, code: null } };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const data = new TextEncoder().encode(JSON.stringify(value));
  res.writeHead(status, { "content-type": "application/json", "content-length": String(data.length) });
  res.end(data);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
