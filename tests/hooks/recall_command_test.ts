/**
 * `recall "<text>"`: what the prompt hook would print for that text in that workspace, byte for byte, then each
 * memory with its score and URI — and nothing changes on disk (no state, no ledger, no memo). In-process
 * (`recallPreview`, and the command through the table for its exit codes and printed form).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, MODEL_DOWN } from "../support/fake-openviking.ts";
import { hookIn, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { runIn } from "../cli/in-process.ts";
import { RecallOutputSchema, recallPreview, renderRecall } from "../../cli/recall.ts";
import { runHook } from "../../memory/dispatch.ts";
import { sha256Hex } from "../../lib/hash.ts";
import { originOf } from "../../openviking/config.ts";
import { snapshot } from "./world.ts";

Deno.test("recall: the hook's own output for the text, then the memories; nothing written anywhere", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const project = `${dir.path}/project`;
  await Deno.mkdir(project);
  // A plugin-mode install: the profile reaches the model through the plugin's system prompt.
  const plugin = `${dir.path}/plugin`;
  await Deno.mkdir(plugin);
  await Deno.writeTextFile(`${plugin}/system-prompt.md`, "instructions and the profile");
  const env = sandboxEnv(dir.path, fake.url);
  const text = "how should I indent TypeScript in this repo?";
  // A sandbox with some state already: recall must leave all of it as it is (the session start's work done
  // inline, so none of it lands after the snapshot).
  const start = { hook_event_name: "SessionStart", session_id: "session_other", cwd: project };
  await hookIn("session-start", { env, stdin: JSON.stringify(start) });
  const before = snapshot(dir.path);
  const out = await recallPreview(text, project, env);
  const printed = await runIn(env, ["recall", text, "--cwd", project]);
  assertEquals(printed.code, 0, printed.stderr);
  assertEquals(snapshot(dir.path), before, "recall wrote nothing (state, ledger, memo, logs)");
  assertEquals(out.memories.map((m) => m.uri), ["viking://user/default/memories/preferences/indent.md"]);
  assertEquals([out.path, out.query], ["context", text]);
  const search = fake.requestsTo("POST /api/v1/search/search")[0].body as object;
  assertTrue(!("session_id" in search), "no session");
  // The hook, first prompt of a new plugin-mode session (no profile in the transcript, nothing shown yet).
  const stdin = {
    hook_event_name: "UserPromptSubmit",
    session_id: "session_new",
    cwd: project,
    prompt: text,
  };
  const hook = await runHook(
    "user-prompt-submit",
    new TextEncoder().encode(JSON.stringify(stdin)),
    { ...env, KIMI_PLUGIN_ROOT: plugin },
  );
  assertEquals(out.stdout, hook, "byte for byte what the hook prints");
  assertEquals(printed.stdout, `${renderRecall(out)}\n`, "the text form: the hook's output, then the list");
  assertTrue(printed.stdout.startsWith(hook.trimEnd()), "the text form starts with the hook's output");
  assertMatch(
    printed.stdout,
    /1 memory via context[^\n]*\n {2}\d\.\d\d {2}viking:\/\/user\/default\/memories\/preferences\/indent\.md/,
  );
  const nope = await runIn(env, ["recall", text, "--cwd", `${dir.path}/nope`, "--json"]);
  assertEquals(nope.code, 2);
});

Deno.test("recall: a server that does not answer is told apart from nothing relevant (exit 1, the fix, nothing written)", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "the-right-key-123" });
  const env = (url: string, key = "an-expired-key-456") =>
    sandboxEnv(dir.path, url, { OPENVIKING_API_KEY: key });
  const recall = (e: Record<string, string>) => recallPreview("anything about the build?", dir.path, e);
  // Down: no answer at all, exit 1, and still nothing written.
  const before = snapshot(dir.path);
  const r = await runIn(env("http://127.0.0.1:9"), [
    "recall",
    "anything about the build?",
    "--cwd",
    dir.path,
    "--json",
  ]);
  assertEquals(r.code, 1, r.stderr);
  const down = RecallOutputSchema.parse(JSON.parse(r.stdout));
  assertEquals([down.stdout, down.path, down.failure?.kind, down.failure?.status], [
    "",
    "none",
    "unreachable",
    0,
  ]);
  assertMatch(down.failure!.summary, /not reachable/);
  assertMatch(down.failure!.fix, /start the server|install --url/);
  const downText = renderRecall(down);
  assertMatch(downText, /would print nothing/);
  assertMatch(downText, /recall failed: OpenViking at http:\/\/127\.0\.0\.1:9 is not reachable/);
  assertMatch(downText, /fix: start the server/);
  assertEquals(snapshot(dir.path), before, "recall wrote nothing");
  // The key refused: its own words and fix.
  const refused = await recall(env(fake.url));
  assertEquals([refused.failure?.kind, refused.failure?.status], ["auth", 401]);
  assertMatch(refused.failure!.fix, /--api-key-stdin/);
  assertMatch(renderRecall(refused), /recall failed: the server refused the key/);
  // The server's model down: its words and the server's fix, not our key's.
  fake.fault(MODEL_DOWN);
  const model = await recall(env(fake.url, "the-right-key-123"));
  assertEquals([model.failure?.kind, model.failure?.status], ["model", 503]);
  assertMatch(renderRecall(model), /recall failed: OpenViking at .* answers, but its model is unreachable/);
  assertMatch(model.failure!.fix, /^on the server, check ov\.conf's embedding section/);
  fake.clearFaults();
  // Up, with the right key and nothing relevant: no failure, in either form.
  fake.context = { entries: [], digest: "", rendered: "", stats: { rewrite: "no_relevant" } };
  const nothing = await recall(env(fake.url, "the-right-key-123"));
  assertEquals([nothing.stdout, nothing.path, nothing.failure], ["", "context", undefined]);
  assertEquals(renderRecall(nothing).includes("recall failed"), false);
});

Deno.test("recall: memories in score order, and a folder's summary is no memory — in the hook's digest and the list", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const entry = (uri: string, score: number, text: string, detail = "abstract") => ({
    uri: `viking://user/default/memories/${uri}`,
    category: "preferences",
    score,
    detail,
    text,
    origin: "self",
  });
  // As the real server ranks them (a peer penalty puts a higher score lower), with a directory's overview.
  fake.context.entries = [
    entry("preferences/default", 0.91, "# Preferences Overview\nUser: default\nTabs and quotes.", "overview"),
    entry("preferences/default/quotes.md", 0.52, "The user prefers double quotes."),
    entry("preferences/default/tabs.md", 0.87, "The user indents with tabs."),
  ];
  const out = await recallPreview("how do I format this file?", dir.path, sandboxEnv(dir.path, fake.url));
  assertEquals(out.memories.map((m) => [m.uri.replace(/^.*\/memories\//, ""), m.score]), [
    ["preferences/default/tabs.md", 0.87],
    ["preferences/default/quotes.md", 0.52],
  ]);
  assertTrue(!out.stdout.includes("Overview") && !out.stdout.includes("preferences/default)"), out.stdout);
  assertMatch(
    renderRecall(out),
    /2 memories via context[^\n]*\n {2}0\.87 [^\n]*tabs\.md[^\n]*\n {2}0\.52 [^\n]*quotes\.md/,
  );
});

Deno.test("recall with memory paused (the breaker open): says so and why at once, as the hook would, asking nothing", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const state = `${dir.path}/.openviking/state`;
  await Deno.mkdir(state, { recursive: true });
  const at = Date.now() - 60_000;
  const reason = `no answer from ${fake.url} within 6000 ms`;
  const file = `${state}/kimicode-breaker-${(await sha256Hex(originOf(fake.url))).slice(0, 16)}.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({ origin: originOf(fake.url), since: at, at, reason, failures: 1 }),
  );
  const r = await runIn(sandboxEnv(dir.path, fake.url), [
    "recall",
    "how do I deploy?",
    "--cwd",
    dir.path,
    "--json",
  ]);
  assertEquals(r.code, 1, "recall was not given");
  const out = RecallOutputSchema.parse(JSON.parse(r.stdout));
  assertEquals(out.path, "paused");
  assertMatch(out.stdout, /^openviking-kimi: memory paused — OpenViking at .* did not answer/);
  assertMatch(renderRecall(out), new RegExp(`memory is paused since 1 min ago: ${reason}`));
  assertEquals(fake.requests.filter((r) => !r.path.startsWith("/health")).length, 0, "nothing asked");
});
