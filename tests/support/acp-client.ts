/**
 * Drives `kimi acp` (Kimi Code as an Agent Client Protocol server on stdio) the way an editor such as Zed
 * does, through the official ACP client library (`@agentclientprotocol/sdk`, stable protocol v1.
 */

import * as acp from "@agentclientprotocol/sdk";
import type { KimiEnv } from "./kimi.ts";

/**
 * What one `session/prompt` produced, as the client saw it: the response's stop reason (`end_turn`,
 * `cancelled`, …; undefined when the request failed), every `agent_message_chunk` text joined (what the
 * editor shows as the answer), the permission requests answered (tool call titles).
 */
interface AcpTurn {
  stopReason: string | undefined;
  text: string;
  permissions: string[];
  durationMs: number;
}

/** The text of a message chunk ("" for other updates and non-text content). */
function chunkText(update: acp.SessionUpdate): string {
  if (update.sessionUpdate !== "agent_message_chunk") return "";
  return update.content.type === "text" ? update.content.text : "";
}

/** Kimi did not answer in time, or exited: unlike an error reply, the connection is unusable. */
class AcpTransportError extends Error {}

/** A running `kimi acp` with one client connection. */
export class KimiAcp {
  readonly #child: Deno.ChildProcess;
  readonly #conn: acp.ClientConnection;
  readonly #updates = new Map<string, acp.SessionUpdate[]>();
  readonly #permissions = new Map<string, string[]>();
  #stderr = "";
  readonly #exited: Promise<Deno.CommandStatus>;
  /** The agent's `initialize` answer. */
  initialized: acp.InitializeResponse | undefined;

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#exited = child.status;
    void (async () => {
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        this.#stderr = (this.#stderr + chunk).slice(-20_000);
      }
    })().catch(() => {});
    this.#conn = acp.client({ name: "openviking-kimi e2e" })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        const allow = params.options.find((o) => o.kind === "allow_once") ??
          params.options.find((o) => o.kind.startsWith("allow"));
        this.#list(this.#permissions, params.sessionId).push(params.toolCall.title ?? "");
        if (!allow) return { outcome: { outcome: "cancelled" } };
        return { outcome: { outcome: "selected", optionId: allow.optionId } };
      })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        this.#list(this.#updates, params.sessionId).push(params.update);
      })
      .connect(acp.ndJsonStream(child.stdin, child.stdout));
  }

  #list<T>(map: Map<string, T[]>, key: string): T[] {
    let list = map.get(key);
    if (!list) map.set(key, list = []);
    return list;
  }

  /** Starts `kimi acp` in the env's work dir and runs `initialize`. */
  static async start(env: KimiEnv): Promise<KimiAcp> {
    const child = env.spawn(["acp"], { stdin: "piped" });
    const agent = new KimiAcp(child);
    try {
      const initialized = agent.#conn.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      agent.initialized = await agent.#await("initialize", initialized, 60_000);
    } catch (e) {
      await agent.close();
      throw e;
    }
    return agent;
  }

  /** Waits for `reply` (a request to the agent), failing on a timeout or if Kimi exits meanwhile. */
  async #await<T>(what: string, reply: Promise<T>, timeoutMs: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new AcpTransportError(`ACP ${what}: no answer within ${timeoutMs} ms`);
    const timeout = new Promise<never>((_, reject) => timer = setTimeout(() => reject(late), timeoutMs));
    const exited = this.#exited.then((s): never => {
      throw new AcpTransportError(`kimi acp exited (code ${s.code}) during ${what}:\n${this.#stderr}`);
    });
    try {
      return await Promise.race([reply, timeout, exited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** `session/new` in `cwd`: returns Kimi's session id (`session_…`). */
  async newSession(cwd: string): Promise<string> {
    const created = this.#conn.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    return (await this.#await("session/new", created, 60_000)).sessionId;
  }

  /** `session/prompt` with one text block; resolves when the turn ends (or the request fails). */
  async prompt(sessionId: string, text: string, timeoutMs = 90_000): Promise<AcpTurn> {
    const updates = this.#list(this.#updates, sessionId);
    const permissions = this.#list(this.#permissions, sessionId);
    const [u0, p0] = [updates.length, permissions.length];
    const started = Date.now();
    let stopReason: string | undefined;
    try {
      const answered = this.#conn.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      stopReason = (await this.#await("session/prompt", answered, timeoutMs)).stopReason;
    } catch (e) {
      if (e instanceof AcpTransportError) throw e;
    }
    const durationMs = Date.now() - started;
    await new Promise((r) => setTimeout(r, 50));
    const answer = updates.slice(u0).map(chunkText).join("");
    return { stopReason, text: answer, permissions: permissions.slice(p0), durationMs };
  }

  /** Every update the agent sent for a session. */
  updates(sessionId: string): acp.SessionUpdate[] {
    return [...(this.#updates.get(sessionId) ?? [])];
  }

  /** The last 20 KB of the agent's stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  /**
   * Ends the connection the way an editor does when it closes: stdin is closed, and Kimi exits on its own
   * (SIGTERM, then SIGKILL, if it has not within 10 s).
   */
  async close(): Promise<Deno.CommandStatus> {
    this.#conn.close();
    try {
      await this.#child.stdin.close();
    } catch { /* already closed by the connection */ }
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      const status = await Promise.race([
        this.#exited,
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000)),
      ]);
      if (status) return status;
      try {
        this.#child.kill(signal);
      } catch { /* gone */ }
    }
    return await this.#exited;
  }

  /** Closes at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
