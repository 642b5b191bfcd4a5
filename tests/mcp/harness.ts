/**
 * Test harness: runs the MCP proxy in-process (the same `runMcpServer` the command uses) on in-memory stdio,
 * with a temporary HOME, and lets a test send lines and wait for output messages.
 */

import { runMcpServer } from "../../cli/mcp.ts";
import type { ProxyOptions } from "../../mcp/proxy.ts";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, type FakeOptions } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";

/** A JSON object as it came out of the proxy. */
export type Json = Record<string, unknown>;

/** Options of an in-process proxy: its cwd, more environment, shorter bounds, a client slow to read. */
export interface HarnessOptions {
  cwd?: string;
  env?: Record<string, string>;
  limits?: ProxyOptions["limits"];
  /** Holds each output line until it resolves (rejects: the output went away). */
  stall?: (line: string) => Promise<void>;
}

/** Starts the proxy with `env` (HOME must be a temporary directory). */
export function startProxy(env: Record<string, string>, options: HarnessOptions = {}) {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const writer = input.writable.getWriter();
  const [lines, parsed, diagnostics] = [[] as string[], [] as Json[], [] as string[]];
  const stop = new AbortController();
  const done = runMcpServer({
    env,
    cwd: options.cwd ?? env.HOME,
    input: input.readable,
    writeLine: async (line) => {
      await options.stall?.(line);
      lines.push(line);
      parsed.push(JSON.parse(line));
    },
    diagnostic: (text) => diagnostics.push(text),
    signal: stop.signal,
    limits: options.limits,
  });
  /** The first output message from the `from`th on that `match` accepts; fails naming `what` after 30 s. */
  const waitFor = async (match: (m: Json) => boolean, what = "a message", from = 0): Promise<Json> => {
    const found = () => parsed.slice(from).find(match);
    await until(() => found() !== undefined, what).catch((e) => {
      throw new Error(`${e.message}; output so far:\n${lines.join("\n")}`);
    });
    return found()!;
  };
  const send = (message: unknown) => writer.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
  const response = (id: unknown, from = 0) =>
    waitFor((m) => m.id === id && ("result" in m || "error" in m), `response to ${JSON.stringify(id)}`, from);
  /** Sends a request and waits for its response (not an earlier one to the same id: ids may be reused). */
  const request = async (id: unknown, method: string, params?: unknown) => {
    const from = parsed.length;
    await send({ jsonrpc: "2.0", id, method, params });
    return await response(id, from);
  };
  return {
    send,
    lines,
    diagnostics,
    messages: () => parsed,
    waitFor,
    response,
    request,
    /** A tools/call of `name` with `args`, answered. */
    call: (id: unknown, name: string, args: unknown = {}) =>
      request(id, "tools/call", { name, arguments: args }),
    /** initialize + notifications/initialized, like Kimi Code; returns the initialize response. */
    async initialize(protocolVersion = "2025-11-25") {
      const clientInfo = { name: "kimi-code", version: "2.1.0" };
      const params = { protocolVersion, capabilities: {}, clientInfo };
      await send({ jsonrpc: "2.0", id: "init", method: "initialize", params });
      const reply = await response("init");
      await send({ jsonrpc: "2.0", method: "notifications/initialized" });
      return reply;
    },
    /** The exit code, once the server stopped. */
    exited: done,
    /** Closes stdin; resolves with the exit code. */
    close: () => writer.close().catch(() => {}).then(() => done),
    /** Stops the server as SIGTERM would; resolves with the exit code. */
    terminate: () => (stop.abort(), done.finally(() => writer.close().catch(() => {}))),
  };
}

/** The `result` of a response, failing the test when it is an error. */
export function resultOf(response: Json): Json {
  assertTrue("result" in response, `expected a result, got ${JSON.stringify(response)}`);
  return response.result as Json;
}

/** The `error` of a response, failing the test when it is a result. */
export function errorOf(response: Json): { code: number; message: string; data?: Json } {
  assertTrue("error" in response, `expected an error, got ${JSON.stringify(response)}`);
  return response.error as { code: number; message: string; data?: Json };
}

/** A port nothing listens on (bound, then released). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  listener.close();
  return (listener.addr as Deno.NetAddr).port;
}

/** Tool names of a tools/list response. */
export const toolNames = (response: Json) =>
  (resultOf(response).tools as { name: string }[]).map((t) => t.name);

/** Resolves once `condition` holds; fails naming `what` after 30 s. */
export async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A temporary HOME, a fake OpenViking and a proxy to it, initialised (the fake saw `initialized`, so a fault
 * is not spent on it); disposing it closes stdin and asserts the exit code 0.
 */
export async function openSession(fakeOptions: FakeOptions = {}, options: HarnessOptions = {}) {
  const home = await tempDir("ovk-mcp-");
  const fake = await FakeOpenViking.start(fakeOptions);
  const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url, ...options.env }, options);
  await proxy.initialize();
  await until(() => fake.mcp.receivedMethod("notifications/initialized").length > 0, "initialized");
  return {
    home,
    fake,
    proxy,
    async [Symbol.asyncDispose]() {
      assertEquals(await proxy.close(), 0);
      await fake.close();
      await home[Symbol.asyncDispose]();
    },
  };
}
