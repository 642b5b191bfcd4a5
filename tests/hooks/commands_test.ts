/**
 * The commands that show what the hooks would do or did, in-process: `recall "<text>"` (the prompt hook's output
 * byte for byte, then the memories; nothing written), `replay` (what it did, what is left, why and the fix).
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { MODEL_DOWN } from "../support/fake-openviking.ts";
import { enqueueCommit, enqueueMessages } from "../support/queue.ts";
import { RecallOutputSchema, recallPreview, renderRecall } from "../../cli/recall.ts";
import { runHook } from "../../memory/dispatch.ts";
import { sha256Hex } from "../../lib/hash.ts";
import { originOf } from "../../openviking/config.ts";
import { doctorCheck, snapshot, world } from "./world.ts";

Deno.test("recall: the hook's own output for the text, then the memories; nothing written anywhere", async () => {
  await using w = await world();
  const [project, plugin] = [`${w.home}/project`, `${w.home}/plugin`];
  await Promise.all([project, plugin].map((d) => Deno.mkdir(d)));
  // A plugin-mode install: the profile reaches the model through the plugin's system prompt.
  await Deno.writeTextFile(`${plugin}/system-prompt.md`, "instructions and the profile");
  const text = "how should I indent TypeScript in this repo?";
  // A sandbox with some state already: recall must leave all of it as it is (the session start's work done
  // inline, so none of it lands after the snapshot).
  await w.hook("session-start", { cwd: project }, "session_other");
  const before = snapshot(w.home);
  const out = await recallPreview(text, project, w.env);
  const printed = await w.cli("recall", text, "--cwd", project);
  assertEquals(printed.code, 0, printed.stderr);
  assertEquals(snapshot(w.home), before, "recall wrote nothing (state, ledger, memo, logs)");
  assertEquals(out.memories.map((m) => m.uri), ["viking://user/default/memories/preferences/indent.md"]);
  assertEquals([out.path, out.query], ["context", text]);
  const search = w.fake.requestsTo("POST /api/v1/search/search")[0].body as object;
  assertTrue(!("session_id" in search), "no session");
  // The hook, first prompt of a new plugin-mode session (no profile in the transcript, nothing shown yet).
  const stdin = {
    hook_event_name: "UserPromptSubmit",
    session_id: "session_new",
    cwd: project,
    prompt: text,
  };
  const raw = new TextEncoder().encode(JSON.stringify(stdin));
  const hook = await runHook("user-prompt-submit", raw, { ...w.env, KIMI_PLUGIN_ROOT: plugin });
  assertEquals(out.stdout, hook, "byte for byte what the hook prints");
  assertEquals(printed.stdout, `${renderRecall(out)}\n`, "the text form: the hook's output, then the list");
  assertTrue(printed.stdout.startsWith(hook.trimEnd()), "the text form starts with the hook's output");
  const listed =
    /1 memory via context[^\n]*\n {2}\d\.\d\d {2}viking:\/\/user\/default\/memories\/preferences\/indent\.md/;
  assertMatch(printed.stdout, listed);
  assertEquals((await w.cli("recall", text, "--cwd", `${w.home}/nope`, "--json")).code, 2);
});

Deno.test('recall: a text the hook asks nothing for, or recall turned off, says why instead of "via skipped"', async () => {
  await using w = await world();
  const short = await w.cli("recall", "hi", "--cwd", w.home);
  assertEquals(short.code, 0, short.stderr);
  assertMatch(
    short.stdout,
    /^recall skipped: the text \("hi"\) is shorter than 3 characters once cleaned/m,
  );
  const off = await recallPreview("how do I deploy?", w.home, { ...w.env, OPENVIKING_AUTO_RECALL: "false" });
  assertMatch(renderRecall(off), /^recall skipped: recall is off here \(OPENVIKING_MEMORY_ENABLED/m);
  assertEquals(w.fake.requestsTo("POST /api/v1/search/search").length, 0, "nothing asked");
  for (const r of [short.stdout, renderRecall(off)]) assertMatch(r, /^0 memories \(peer|^0 memories$/m);
});

Deno.test("recall: a server that does not answer is told apart from nothing relevant (exit 1, the fix, nothing written)", async () => {
  await using w = await world({ fake: { apiKey: "the-right-key-123" } });
  const env = (key = "an-expired-key-456") => ({
    ...w.env,
    OPENVIKING_URL: w.fake.url,
    OPENVIKING_API_KEY: key,
  });
  const ask = "anything about the build?";
  const recall = (e: Record<string, string>) => recallPreview(ask, w.home, e);
  // Down: no answer at all, exit 1, and still nothing written.
  const before = snapshot(w.home);
  w.env.OPENVIKING_URL = "http://127.0.0.1:9";
  const r = await w.cli("recall", ask, "--cwd", w.home, "--json");
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
  assertMatch(downText, /^0 memories( \(peer [^)]*\))?$/m, "no stage answered: none named");
  assertEquals(snapshot(w.home), before, "recall wrote nothing");
  // The key refused: its own words and fix.
  const refused = await recall(env());
  assertEquals([refused.failure?.kind, refused.failure?.status], ["auth", 401]);
  assertMatch(refused.failure!.fix, /--api-key-stdin/);
  assertMatch(renderRecall(refused), /recall failed: the server refused the key/);
  // The server's model down: its words and the server's fix, not our key's.
  w.fake.fault(MODEL_DOWN);
  const model = await recall(env("the-right-key-123"));
  assertEquals([model.failure?.kind, model.failure?.status], ["model", 503]);
  assertMatch(renderRecall(model), /recall failed: OpenViking at .* answers, but its model is unreachable/);
  assertMatch(model.failure!.fix, /^on the server, check ov\.conf's embedding section/);
  w.fake.clearFaults();
  // Up, with the right key and nothing relevant: no failure, in either form.
  w.fake.context = { entries: [], digest: "", rendered: "", stats: { rewrite: "no_relevant" } };
  const nothing = await recall(env("the-right-key-123"));
  assertEquals([nothing.stdout, nothing.path, nothing.failure], ["", "context", undefined]);
  assertEquals(renderRecall(nothing).includes("recall failed"), false);
});

Deno.test("recall with memory paused (the breaker open): says so and why at once, as the hook would, asking nothing", async () => {
  await using w = await world();
  const [state, at, origin] = [`${w.home}/.openviking/state`, Date.now() - 60_000, originOf(w.fake.url)];
  await Deno.mkdir(state, { recursive: true });
  const reason = `no answer from ${w.fake.url} within 6000 ms`;
  const file = `${state}/kimicode-breaker-${(await sha256Hex(origin)).slice(0, 16)}.json`;
  await Deno.writeTextFile(file, JSON.stringify({ origin, since: at, at, reason, failures: 1 }));
  const r = await w.cli("recall", "how do I deploy?", "--cwd", w.home, "--json");
  assertEquals(r.code, 1, "recall was not given");
  const out = RecallOutputSchema.parse(JSON.parse(r.stdout));
  assertEquals(out.path, "paused");
  assertMatch(out.stdout, /^openviking-kimi: memory paused — OpenViking at .* did not answer/);
  assertMatch(renderRecall(out), new RegExp(`memory is paused since 1 min ago: ${reason}`));
  assertMatch(renderRecall(out), /\n\n0 memories \(peer /, "no recall stage answered: none named");
  assertEquals(w.fake.requests.filter((r) => !r.path.startsWith("/health")).length, 0, "nothing asked");
});

const QUEUED = "kc-session_5747a705-0000-4000-8000-000000000099";

/** Two messages and a commit of one session in `pending`'s queue. */
async function queued(pending: string): Promise<void> {
  const notes = [{ role: "user", content: "remember that the build runs in CI only" }, {
    role: "assistant",
    content: "noted",
  }];
  await enqueueMessages(pending, QUEUED, notes as { role: "user" | "assistant"; content: string }[]);
  await enqueueCommit(pending, QUEUED, `${QUEUED}:1:assistant`);
}

Deno.test("replay: with the server away, what is left, why and the fix (exit 1); back, what it sent; --json", async () => {
  await using w = await world();
  const url = w.fake.url;
  const replay = async (...args: string[]) => {
    const r = await w.cli("replay", ...args);
    return { ...r, report: args.length ? JSON.parse(r.stdout) : undefined };
  };
  await queued(w.pending);
  w.fake.fault({ route: "*", drop: true });
  const away = await replay();
  assertEquals([away.code, away.stdout], [1, `Replayed nothing to ${url}: 2 write(s) are still queued.\n`]);
  assertMatch(away.stderr, new RegExp(`^2 entries are still queued in .*: OpenViking at ${url} `));
  assertMatch(away.stderr, /\n {2}fix: start the server/);
  const j = (await replay("--json")).report;
  assertEquals([j.replayed, j.left, j.cause.kind], [0, 2, "unreachable"]);

  w.fake.clearFaults();
  const back = await replay();
  const said =
    `Replayed 2 queued write(s) to ${url}: 2 message(s) sent, 1 commit(s) started.\nThe queue is empty.\n`;
  assertEquals([back.code, back.stdout], [0, said], back.stderr);
  assertEquals(w.fake.messages(QUEUED).length, 2);
  await queued(w.pending);
  const { code, report } = await replay("--json");
  assertEquals([code, report.replayed, report.messages, report.left], [0, 2, 2, 0]);
  assertEquals([report.server, report.commitTasks.length], [url, 1]);
});

Deno.test("replay: queue files it cannot read are set aside, kept, and replay, status and doctor say where and what to do", async () => {
  await using w = await world();
  await queued(w.pending);
  const queue = `${w.pending}/kimicode/${QUEUED}`;
  const [torn, commit] = (await Array.fromAsync(Deno.readDir(queue))).map((e) => `${queue}/${e.name}`).sort();
  await Deno.writeTextFile(torn, (await Deno.readTextFile(torn)).slice(0, 40));
  await Deno.writeTextFile(
    commit,
    JSON.stringify({ ...JSON.parse(await Deno.readTextFile(commit)), version: 2 }),
  );
  const r = await w.cli("replay");
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /the queue is empty\.\n2 queued write\(s\) could not be read/i);
  assertStringIncludes(r.stdout, queue);
  for (const f of [torn, commit]) assertTrue((await Deno.stat(`${f}.unreadable`)).isFile, "kept");
  const s = await w.cli("status");
  assertMatch(s.stdout, /\n {8}2 queued write\(s\) could not be read/);
  assertStringIncludes(s.stdout.replaceAll(/\s+/g, " "), queue);
  assertMatch(s.stdout, /delete/);
  const check = await doctorCheck(w.env, "set-aside");
  assertMatch(check.summary, /^2 queued write\(s\) could not be read .* set aside in /);
  assertStringIncludes(check.summary, queue);
  assertMatch(check.fix ?? "", /look at them.*\.unreadable.*delete/);
});
