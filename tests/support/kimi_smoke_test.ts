/**
 * Tests of the harness itself: the scripted model server (always), and the real Kimi Code CLI driven through
 * tests/support/kimi.ts (skipped, with a message, when the CLI cannot be installed or OPENVIKING_KIMI_SKIP=1).
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "./assert.ts";
import { messageText, ModelServer } from "./model-server.ts";
import { KimiEnv, type KimiInstall, parseJsonl, tmuxAvailable, tryInstallKimi } from "./kimi.ts";

/** Reads an SSE body into its `data:` payloads. */
async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split("\n\n").map((b) => b.trim()).filter((b) => b.startsWith("data: ")).map((b) => b.slice(6));
}

function chat(server: ModelServer, body: unknown): Promise<Response> {
  return fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

Deno.test("model server: streams a text answer as chat.completion.chunk SSE and records the request", async () => {
  await using server = await ModelServer.start();
  const res = await chat(server, {
    model: "m",
    stream: true,
    messages: [{ role: "user", content: "hi there" }],
  });
  assertEquals(res.headers.get("content-type"), "text/event-stream");
  const data = await sseData(res);
  assertEquals(data.at(-1), "[DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  assertTrue(chunks.every((c) => c.object === "chat.completion.chunk"));
  const text = chunks.map((c) => c.choices[0].delta.content ?? "").join("");
  assertEquals(text, "ACK 1: hi there");
  assertEquals(chunks.at(-1).choices[0].finish_reason, "stop");
  assertTrue(chunks.at(-1).usage.total_tokens > 0);
  assertEquals(server.chatRequests().length, 1);
  assertEquals(server.chatRequests()[0].prompt, "hi there");
});

Deno.test("model server: RUN_TOOL asks for Bash, then answers once the tool result is present", async () => {
  await using server = await ModelServer.start();
  const user = { role: "user", content: "please RUN_TOOL" };
  const first = (await sseData(await chat(server, { stream: true, messages: [user] }))).slice(0, -1)
    .map((d) => JSON.parse(d));
  const call = first.flatMap((c) => c.choices[0].delta.tool_calls ?? [])[0];
  assertEquals(call.function.name, "Bash");
  assertEquals(first.at(-1).choices[0].finish_reason, "tool_calls");
  const second = await (await chat(server, {
    stream: false,
    messages: [
      user,
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: call.id, type: "function", function: call.function }],
      },
      { role: "tool", tool_call_id: call.id, content: "Wall time: 0.01 seconds\ntool-ran\n" },
    ],
  })).json();
  assertEquals(second.object, "chat.completion");
  assertEquals(second.choices[0].message.content, "FINAL after tool: tool-ran");
});

Deno.test("model server: FAIL answers 400, queued replies win over the script, /models lists the model", async () => {
  await using server = await ModelServer.start();
  const res = await chat(server, { stream: true, messages: [{ role: "user", content: "FAIL now" }] });
  assertEquals(res.status, 400);
  assertEquals((await res.json()).error.message, "mock request rejected");
  server.enqueue({ kind: "text", text: "queued" });
  const q = await (await chat(server, { messages: [{ role: "user", content: "FAIL again" }] })).json();
  assertEquals(q.choices[0].message.content, "queued");
  const models = await (await fetch(`${server.baseUrl}/models`)).json();
  assertEquals(models.data[0].id, "fake-model");
});

Deno.test("model server: a SLOW stream can be cut by the client, a hanging request ends on close", async () => {
  const server = await ModelServer.start();
  const ac = new AbortController();
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "a SLOW one" }] }),
    signal: ac.signal,
  });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assertStringIncludes(first, "chat.completion.chunk");
  ac.abort();
  await reader.cancel().catch(() => {});
  server.enqueue({ kind: "hang" });
  const hanging = fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "x" }] }),
  }).then((r) => r.text()).catch((e) => String(e));
  await server.waitForChat((r) => r.prompt === "x");
  await server.close();
  await hanging;
  assertEquals(server.chatRequests().map((r) => r.prompt), ["a SLOW one", "x"]);
});

// ---------------------------------------------------------------------------------------------------------
// The real CLI.

const VERSION = "2.1.0";
let install: KimiInstall | undefined;
let skipReason: string | undefined;
if (Deno.env.get("OPENVIKING_KIMI_SKIP") === "1") {
  skipReason = "OPENVIKING_KIMI_SKIP=1";
} else {
  const r = await tryInstallKimi(VERSION);
  if (typeof r === "string") {
    skipReason = `cannot install @moonshot-ai/kimi-code@${VERSION}: ${r.slice(0, 300)}`;
  } else install = r;
}
if (skipReason) console.warn(`SKIPPING real Kimi Code tests: ${skipReason}`);

const tmuxOk = await tmuxAvailable();
if (!skipReason && !tmuxOk) console.warn("SKIPPING the Kimi TUI test: tmux is not available");

Deno.test({
  name: `kimi ${VERSION} print mode: hook output reaches the model, Bash runs, the journal is written`,
  ignore: install === undefined,
  fn: async () => {
    await using server = await ModelServer.start();
    await using env = await KimiEnv.create(install!, { baseUrl: server.baseUrl });
    await env.addHooks([{
      event: "UserPromptSubmit",
      command: "cat >/dev/null; echo '<openviking-context>tabs</openviking-context>'",
    }]);
    const payloads = `${env.root}/payloads.jsonl`;
    await env.addRecordingHooks(payloads, { events: ["Stop", "SessionStart"] });
    const r = await env.print("please RUN_TOOL");
    assertEquals(r.code, 0, r.stderr);
    assertStringIncludes(r.stdout, "FINAL after tool: tool-ran");
    assertMatch(r.sessionId ?? "", /^session_/);
    const first = server.chatRequests()[0];
    const injected = first.body.messages.map(messageText).find((t) => t.includes("<hook_result"));
    assertStringIncludes(injected ?? "", '<hook_result hook_event="UserPromptSubmit">');
    assertStringIncludes(injected ?? "", "<openviking-context>tabs</openviking-context>");
    const journal = parseJsonl<{ type: string }>(
      await Deno.readTextFile(await env.journalPath(r.sessionId!)),
    );
    assertTrue(journal.some((l) => l.type === "turn.ended"));
    const events = parseJsonl<{ event: string }>(await Deno.readTextFile(payloads)).map((p) => p.event);
    assertEquals(events, ["SessionStart", "Stop"]);

    const again = await env.print("and again", { sessionId: r.sessionId });
    assertEquals(again.code, 0, again.stderr);
    assertEquals(again.sessionId, r.sessionId);
  },
});

Deno.test({
  name: `kimi ${VERSION} TUI under tmux: a turn, then /exit`,
  ignore: install === undefined || !tmuxOk,
  fn: async () => {
    await using server = await ModelServer.start();
    await using env = await KimiEnv.create(install!, { baseUrl: server.baseUrl });
    await using tui = await env.tui();
    await tui.submit("hello from the tui");
    await tui.waitFor(/ACK \d+: hello from the tui/);
    assertEquals(await tui.exit(), 0);
    assertEquals((await env.sessionIndex()).length, 1);
  },
});
