/**
 * Drives `kimi web` (Kimi Code's local REST server behind the web UI) the way the web UI does: the bearer
 * token from the start-up banner, `POST /api/v1/sessions {metadata: {cwd}}`, `POST …/profile {agent_config:
 * {model}}` (a session has no model until then: its turns fail `model.not_configured`), `POST …/prompts`,
 * tool approvals through `…/approvals`, and the answer read back from `…/messages`.
 */

import * as z from "zod/mini";
import { type KimiEnv, waitUntil } from "./kimi.ts";

/**
 * What one prompt produced: the session's `last_turn_reason` once the turn is over (`completed`, `failed` or
 * `cancelled`), the text of each assistant message after the prompt in order (what the web UI shows as the
 * answer), the tool approvals granted during the turn (their `action` texts).
 */
interface WebTurn {
  reason: string;
  texts: string[];
  approvals: string[];
  durationMs: number;
}

const Envelope = z.looseObject({ code: z.number(), msg: z.optional(z.string()), data: z.unknown() });
const SessionData = z.looseObject({
  id: z.string(),
  busy: z.optional(z.boolean()),
  main_turn_active: z.optional(z.boolean()),
  last_turn_reason: z.optional(z.string()),
});
const PromptsData = z.looseObject({ active: z.nullable(z.unknown()), queued: z.array(z.unknown()) });
const Accepted = z.looseObject({ prompt_id: z.string(), user_message_id: z.string() });
const Approvals = z.looseObject({
  items: z.array(z.looseObject({ approval_id: z.string(), action: z.optional(z.string()) })),
});
const Messages = z.looseObject({
  items: z.array(z.looseObject({
    id: z.string(),
    role: z.string(),
    created_at: z.optional(z.string()),
    content: z.array(z.looseObject({ type: z.string(), text: z.optional(z.string()) })),
  })),
});

/** A `kimi web --no-open --port 0` server of one Kimi home. */
export class KimiWeb {
  private constructor(
    private readonly child: Deno.ChildProcess,
    readonly url: string,
    readonly token: string,
  ) {}

  /** Starts the server in the env's work dir and waits for its banner (URL and token). */
  static async start(env: KimiEnv): Promise<KimiWeb> {
    const child = env.spawn(["web", "--no-open", "--port", "0"]);
    const output = { text: "" };
    for (const stream of [child.stdout, child.stderr]) {
      void (async () => {
        for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
          output.text = (output.text + chunk).slice(-20_000);
        }
      })().catch(() => {});
    }
    let exited = false;
    child.status.then(() => exited = true);
    const banner = /Local:\s+(http:\/\/127\.0\.0\.1:\d+)\/\S*\s[\s\S]*?Token:\s+(\S+)/;
    try {
      const [, url, token] = await waitUntil(
        () => exited ? ["", "", ""] : output.text.match(banner),
        60_000,
        "the kimi web banner",
      );
      if (exited) throw new Error(`kimi web exited before it was ready:\n${output.text}`);
      return new KimiWeb(child, url, token);
    } catch (e) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      throw new Error(`${(e as Error).message}\n--- kimi web output ---\n${output.text}`);
    }
  }

  /** Calls the REST API; returns `data` of a `code: 0` envelope, throws with the server's message otherwise. */
  async api(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    const parsed = Envelope.safeParse(JSON.parse(text || "null"));
    if (!res.ok || !parsed.success || parsed.data.code !== 0) {
      throw new Error(`kimi web ${method} ${path} → ${res.status}: ${text.slice(0, 500)}`);
    }
    return parsed.data.data;
  }

  /** Creates a session in `cwd` (Kimi's `session_…` id). */
  async createSession(cwd: string): Promise<string> {
    return SessionData.parse(await this.api("POST", "/api/v1/sessions", { metadata: { cwd } })).id;
  }

  /** Sets the session's model (the web UI's model picker). */
  async setModel(sessionId: string, model: string): Promise<void> {
    await this.api("POST", `/api/v1/sessions/${sessionId}/profile`, { agent_config: { model } });
  }

  /** The session as the server reports it. */
  async session(sessionId: string): Promise<z.infer<typeof SessionData>> {
    return SessionData.parse(await this.api("GET", `/api/v1/sessions/${sessionId}`));
  }

  /**
   * Submits a text prompt and waits until the session is idle again, approving every tool approval it asks
   * for meanwhile (the user clicking "Approve").
   */
  async prompt(sessionId: string, text: string, timeoutMs = 90_000): Promise<WebTurn> {
    const started = Date.now();
    const at = `/api/v1/sessions/${sessionId}`;
    const accepted = Accepted.parse(
      await this.api("POST", `${at}/prompts`, { content: [{ type: "text", text }] }),
    );
    const approvals: string[] = [];
    const idle = async () => {
      const pending = Approvals.parse(await this.api("GET", `${at}/approvals?status=pending`));
      for (const a of pending.items) {
        await this.api("POST", `${at}/approvals/${a.approval_id}`, { decision: "approved" });
        approvals.push(a.action ?? "");
      }
      const prompts = PromptsData.parse(await this.api("GET", `${at}/prompts`));
      if (prompts.active !== null || prompts.queued.length > 0) return undefined;
      const session = await this.session(sessionId);
      return !session.busy && !session.main_turn_active && session.last_turn_reason ? session : undefined;
    };
    const s = await waitUntil(idle, timeoutMs, `the web prompt ${JSON.stringify(text)} to finish`);
    const query = `after_id=${accepted.user_message_id}&role=assistant&page_size=100`;
    const after = Messages.parse(await this.api("GET", `${at}/messages?${query}`));
    const texts = after.items
      .toSorted((a, b) => String(a.created_at).localeCompare(String(b.created_at)))
      .map((m) => m.content.filter((p) => p.type === "text").map((p) => p.text ?? "").join(""))
      .filter((t) => t.length > 0);
    return { reason: s.last_turn_reason ?? "", texts, approvals, durationMs: Date.now() - started };
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s). */
  async close(): Promise<Deno.CommandStatus> {
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      try {
        this.child.kill(signal);
      } catch { /* gone */ }
      const status = await Promise.race([
        this.child.status,
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000)),
      ]);
      if (status) return status;
    }
    return await this.child.status;
  }

  /** Closes at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
