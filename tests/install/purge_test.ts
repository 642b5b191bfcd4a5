/**
 * A new user's walk through `uninstall --purge` (round 6): a `.bak` install made that holds nothing but what
 * the file holds goes, in every Kimi home; a changed URL names the other homes it moves; what waits in the
 * queue for another server is named with where it goes.
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { acceptingFetch, closedAddress, exists, fakeCompiled, installSandbox } from "./helpers.ts";
import { withLock } from "../../lib/lock.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { destinationFor, goesTo, queueSummary, SessionQueue } from "../../openviking/queue.ts";
import { sessionDestination } from "../../memory/context.ts";
import { appendLedger } from "../../memory/ledger.ts";
import { FakeOpenViking, userKey } from "../support/fake-openviking.ts";
import { runIn } from "../cli/in-process.ts";
import { textColumns } from "../../lib/columns.ts";
import { commandName } from "../../lib/self.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { writeConfigModeHome } from "./config_mode_home.ts";

Deno.test("uninstall --purge deletes the config.toml.bak install made moving a config-mode home, in each home", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: closedAddress() });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  await Deno.mkdir(second, { recursive: true });
  const config = '# mine\ndefault_model = "k3"\n';
  const older: Record<string, string> = {};
  for (const home of [t.kimi, second]) {
    await Deno.writeTextFile(`${home}/config.toml`, config);
    older[home] = (await writeConfigModeHome(home)).config;
  }
  for (const kimiHome of [undefined, second]) {
    await t.run(runInstall, { kimiHome }, ctx);
  }
  for (const kimiHome of [second, undefined]) {
    const home = kimiHome ?? t.kimi;
    assertEquals(await Deno.readTextFile(`${home}/config.toml.bak`), older[home]);
    const said = await t.run(runUninstall, { kimiHome, purge: true }, ctx);
    assertEquals(await Deno.readTextFile(`${home}/config.toml`), config);
    assertEquals(await exists(`${home}/config.toml.bak`), false, said);
    assertStringIncludes(said, `${home}/config.toml.bak`);
  }
});

Deno.test("uninstall says where writes queued for another server go and the command delivering them", async () => {
  await using dir = await tempDir();
  const here = closedAddress();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: here });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  await t.run(runInstall, {}, ctx);
  const pending = `${t.ov}/pending`;
  const other = { url: "http://10.0.0.9:1933", account: "acme", user: "bob" };
  const msg = { role: "user" as const, content: "hello" };
  await (await SessionQueue.open(pending, "kc-elsewhere", other)).messages([msg]);
  await (await SessionQueue.open(pending, "kc-here", { url: here, account: "", user: "" })).messages([msg]);
  const said = await t.run(runUninstall, { purge: true }, ctx);
  assertStringIncludes(said, "1 message(s), 0 commit(s) are for another server or identity");
  assertStringIncludes(
    said,
    "OPENVIKING_URL=http://10.0.0.9:1933 OPENVIKING_ACCOUNT=acme OPENVIKING_USER=bob",
  );
  assertStringIncludes(said, "replay`");
  // Only the one queued for this server is replayed by the next session start.
  assertStringIncludes(
    said,
    "1 of them (1 session(s)) the next session start replays once you install again",
  );
});

Deno.test("uninstall --purge of a session queued for A, then for this server behind them: each counted where it goes", async () => {
  await using dir = await tempDir();
  const here = closedAddress();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: here });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  await t.run(runInstall, {}, ctx);
  const [pending, a] = [`${t.ov}/pending`, "http://10.0.0.9:1933"];
  const msg = (content: string) => ({ role: "user" as const, content });
  const queue = (url: string) => SessionQueue.open(pending, "kc-moved", { url, account: "", user: "" });
  await (await queue(a)).messages([msg("one"), msg("two")]);
  await (await queue(here)).messages([msg("three")]);
  const said = (await t.run(runUninstall, { purge: true }, ctx)).replace(/\s+/g, " ");
  assertStringIncludes(
    said,
    `2 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${a}); ` +
      "1 message(s), 0 commit(s) for this server wait behind them",
  );
});

Deno.test("install --url names the other Kimi homes that now use the new address and the writes queued for the first (with the replay that sends them there), in a dry run too", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  const [a, b] = ["http://127.0.0.1:9", "http://127.0.0.1:8"];
  await t.run(runInstall, { credentials: { url: a } }, ctx);
  assertNotMatch(await t.run(runInstall, { kimiHome: second }, ctx), /now use|would use/);
  const msg = { role: "user" as const, content: "hello" };
  const queue = await SessionQueue.open(`${t.ov}/pending`, "kc-s1", { url: a, account: "", user: "" });
  await queue.messages([msg]);
  for (const dryRun of [true, false]) {
    const said = await t.run(runInstall, { dryRun, credentials: { url: b } }, ctx);
    const verb = dryRun ? "would then use" : "now uses";
    assertStringIncludes(said, `the Kimi home ${second} shares ${t.ov}/ovcli.conf: it ${verb} ${b} too`);
    assertStringIncludes(
      said,
      `1 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${a})`,
    );
    assertMatch(said, new RegExp(`\`OPENVIKING_URL=${a} .+ replay\``));
  }
  // The same address again moves nothing.
  assertNotMatch(await t.run(runInstall, { credentials: { url: b } }, ctx), /shares/);
  // Back to the first: they go there again, nothing to say.
  assertNotMatch(await t.run(runInstall, { credentials: { url: a } }, ctx), /for another server/);
});

Deno.test("install with another key for the same URL says, in one line, what waits uncommitted or queued under the key it replaces, and what happens to it", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path), { fetch: acceptingFetch });
  const url = "http://127.0.0.1:9";
  const install = (apiKey: string, dryRun = false) =>
    t.run(runInstall, { dryRun, credentials: { url, apiKey, apiKeyFrom: "stdin" } }, ctx);
  await install("key-of-ana");
  assertNotMatch(await install("key-of-ana"), /previous key/, "the same key: nothing to say");
  const state = `${t.ov}/hook-state/kimicode`;
  await Deno.mkdir(state, { recursive: true });
  const destination = await sessionDestination({ baseUrl: url, account: "", user: "", apiKey: "key-of-ana" });
  const s = { version: 1, capturedSinceCommit: 2, ovSession: "kc-s1", destination, lastAckedKey: "k2" };
  await Deno.writeTextFile(`${state}/kc-s1.json`, JSON.stringify(s));
  const msg = { role: "user" as const, content: "hello" };
  const ana = await destinationFor({ baseUrl: url, apiKey: "key-of-ana" });
  await (await SessionQueue.open(`${t.ov}/pending`, "kc-s2", ana)).messages([msg]);
  for (const dryRun of [true, false]) {
    const said = (await install("key-of-bo", dryRun)).split("\n").filter((l) => /previous key/.test(l));
    assertEquals(said.length, 1, said.join("\n"));
    assertMatch(
      said[0],
      /^Note: under the previous key for http:\/\/127\.0\.0\.1:9, 2 message\(s\) of 1 session\(s\) wait for a commit that only that key makes, and 1 message\(s\), 0 commit\(s\) of 1 session\(s\) queued go only with that key or one of the same user: to send them, run `OPENVIKING_API_KEY=<the previous key> .+ replay`\.$/,
    );
  }
});

Deno.test("install with another user's key for the same URL names the writes queued under the old key with their identity, in the same line as the captures", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path), { fetch: acceptingFetch });
  const url = "http://127.0.0.1:9";
  const [old, coder] = [userKey("default", "default"), userKey("kimi-e2e", "coder")];
  const install = (apiKey: string) =>
    t.run(runInstall, { credentials: { url, apiKey, apiKeyFrom: "stdin" } }, ctx);
  await install(old);
  const state = `${t.ov}/hook-state/kimicode`;
  await Deno.mkdir(state, { recursive: true });
  const destination = await sessionDestination({ baseUrl: url, account: "", user: "", apiKey: old });
  const s = { version: 1, capturedSinceCommit: 2, ovSession: "kc-s1", destination, lastAckedKey: "k2" };
  await Deno.writeTextFile(`${state}/kc-s1.json`, JSON.stringify(s));
  // Queued by a Kimi whose environment named the account and user too.
  const queuedFor = { baseUrl: url, account: "default", user: "default", apiKey: old };
  const msg = { role: "user" as const, content: "hello" };
  await (await SessionQueue.open(`${t.ov}/pending`, "kc-s2", await destinationFor(queuedFor))).messages([
    msg,
  ]);
  const said = (await install(coder)).split("\n").filter((l) => /previous key/.test(l));
  assertEquals(said.length, 1, said.join("\n"));
  assertStringIncludes(
    said[0],
    "2 message(s) of 1 session(s) wait for a commit that only that key makes, and ",
  );
  assertStringIncludes(said[0], "1 message(s), 0 commit(s) of 1 session(s) queued go only with that key");
  assertMatch(
    said[0],
    /`OPENVIKING_ACCOUNT=default OPENVIKING_USER=default OPENVIKING_API_KEY=<the previous key> .+ replay`/,
  );
});

/**
 * A process standing for our idle-commit worker (or, without `watchDir`, any process of the copy): holds the
 * copy's in-use.lock shared; with `watchDir`, ends once that directory is gone, as the watch does.
 */
async function holder(copy: string, watchDir?: string) {
  const code = `
    const use = await Deno.open(${JSON.stringify(`${copy}/in-use.lock`)}, { read: true });
    if (!use.tryLockSync(false)) Deno.exit(3);
    console.log("ready");
    for (let i = 0; i < 300; i++) {
      await new Promise((r) => setTimeout(r, 200));
      ${
    watchDir
      ? `if (!(await Deno.stat(${JSON.stringify(watchDir)}).then(() => true, () => false))) Deno.exit(0);`
      : ""
  }
    }`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assertEquals((await reader.read()).value?.trim(), "ready");
  reader.releaseLock();
  return child;
}

/** A purge sandbox: installed (release binary), a version copy in place, a session with `messages` waiting for a commit. */
/** A server that accepts every request (a commit: task t1), and the paths it was asked for. */
function acceptingServer() {
  const posts: string[] = [];
  const fetcher: typeof fetch = (input) => {
    posts.push(new URL(String(input)).pathname);
    return Promise.resolve(Response.json({ status: "ok", result: { task_id: "t1" } }));
  };
  return { posts, fetcher };
}

async function purgeSandbox(path: string, messages: number, fetcher: typeof fetch) {
  const url = "http://127.0.0.1:9";
  const t = await installSandbox(path, { OPENVIKING_URL: url });
  const ctx = t.ctx(await fakeCompiled(path), { fetch: fetcher });
  await t.run(runInstall, {}, ctx);
  const copy = `${t.ov}/agent-integrations/kimicode/versions/0.0.1-0123456789ab`;
  await Deno.mkdir(`${copy}/bin`, { recursive: true });
  await Deno.writeTextFile(`${copy}/in-use.lock`, "");
  const state = `${t.ov}/hook-state/kimicode`;
  await Deno.mkdir(state, { recursive: true });
  const destination = await sessionDestination({ baseUrl: url, account: "", user: "", apiKey: "" });
  const s = {
    version: 1,
    capturedSinceCommit: messages,
    ovSession: "kc-s1",
    destination,
    lastAckedKey: "k2",
  };
  await Deno.writeTextFile(`${state}/kc-s1.json`, JSON.stringify(s));
  return { t, ctx, copy, watchDir: state };
}

Deno.test({
  name:
    "uninstall --purge queues the commit that waits, sending none; our idle watch ends with the hook state, and the copy it held goes",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const posts: string[] = [];
    const fetcher: typeof fetch = (input, init) => {
      posts.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
      return Promise.resolve(Response.json({ status: "ok", result: { task_id: "t1" } }));
    };
    const { t, ctx, copy, watchDir } = await purgeSandbox(dir.path, 2, fetcher);
    const worker = await holder(copy, watchDir);
    posts.length = 0; // install's look at the server
    const dry = await t.run(runUninstall, { purge: true, dryRun: true }, ctx);
    assertStringIncludes(
      dry,
      "queue the commit of the 2 captured message(s) of 1 session(s) waiting for one",
    );
    const said = await t.run(runUninstall, { purge: true }, ctx);
    assertEquals(posts, [], "a purge sends no commit");
    assertStringIncludes(said, `Queued: the commit of kc-s1 (2 message(s)), in ${t.ov}/pending/kimicode`);
    const queued = (await queueSummary(`${t.ov}/pending`)).sessions;
    assertEquals(queued.map((q) => [q.sessionId, q.commits]), [["kc-s1", 1]]);
    assertEquals((await worker.status).code, 0, "the watch ended by itself once the hook state went");
    assertEquals(await exists(copy), false, said);
  },
});

Deno.test({
  name: "uninstall --purge names the command that finishes when another process holds the copy",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const down: typeof fetch = () => Promise.reject(new TypeError("connection refused"));
    const { t, ctx, copy } = await purgeSandbox(dir.path, 2, down);
    const other = await holder(copy); // a Kimi session's MCP server, say: not ours to stop
    try {
      const said = await t.run(runUninstall, { purge: true }, ctx);
      assertStringIncludes(
        said,
        `\nNote: the version ${copy} was not removed: a running process uses it (a Kimi session's MCP server or ` +
          `a hook); once it has ended, run ${copy}/bin/openviking-kimi uninstall --purge.`,
      );
      assertEquals(await exists(copy), true);
    } finally {
      other.kill();
      await other.status;
    }
  },
});

Deno.test("uninstall --purge queues another server's uncommitted captures for that server; the command it prints delivers them there", async () => {
  await using dir = await tempDir();
  await using old = await FakeOpenViking.start();
  const { posts, fetcher } = acceptingServer();
  const { t, ctx, watchDir } = await purgeSandbox(dir.path, 2, fetcher);
  const was = JSON.parse(await Deno.readTextFile(`${watchDir}/kc-s1.json`));
  // kc-s1 was captured for the old server, its server and identity kept; kc-s2 by an older version: only its
  // ledger says where its captures went.
  const to = { url: old.url, account: "", user: "" };
  await Deno.writeTextFile(
    `${watchDir}/kc-s1.json`,
    JSON.stringify({ ...was, destination: "0".repeat(32), to }),
  );
  await Deno.writeTextFile(
    `${watchDir}/kc-s2.json`,
    JSON.stringify({ ...was, ovSession: "kc-s2", destination: "1".repeat(32) }),
  );
  const turn = { at: 1, ms: 0, event: "stop", turns: 1, sent: 1, queued: 0, rejected: 0 } as const;
  const origin = { url: old.url, who: "" };
  await appendLedger(`${t.ov}/ledger/kimicode`, "kc-s2", { kind: "capture", ...turn, commit: "", origin });
  for (const sid of ["kc-s1", "kc-s2"]) {
    const body = JSON.stringify({ role: "user", content: `what ${sid} said` });
    const headers = { "content-type": "application/json" };
    await (await fetch(`${old.url}/api/v1/sessions/${sid}/messages`, { method: "POST", body, headers })).body
      ?.cancel();
  }
  posts.length = 0;
  const command = commandName(ctx.env); // the command install placed, and places again
  const said = await t.run(runUninstall, { purge: true }, ctx);
  assertEquals(posts, [], "nothing went to the server configured now");
  assertNotMatch(said, /install --url|--api-key/);
  for (const line of said.split("\n").filter((l) => l.includes("kc-s") || l.includes("replay"))) {
    assertTrue(textColumns(line) <= 80 || !/\S \S/.test(line.trim()), `too wide: ${line}`);
  }
  // What it prints, run as printed: install again, then the replay for the old server.
  const flat = said.replace(/\n\s+/g, " ");
  assertStringIncludes(flat, "the commit of kc-s1 (2 message(s)), kc-s2 (2 message(s))");
  assertStringIncludes(flat, "install again, then run `OPENVIKING_URL=");
  assertStringIncludes(flat, "they are sent only there and stay queued until then");
  const printed = /`((?:[A-Z_]+=\S+ )+)(.+?) replay`/.exec(flat);
  assertTrue(printed, flat);
  assertEquals(printed[2], command, "this program, run as the user runs it");
  const vars = Object.fromEntries(printed[1].trim().split(" ").map((v) => v.split("=", 2)));
  assertEquals(vars, { OPENVIKING_URL: old.url });
  await t.run(runInstall, {}, ctx);
  const replay = await runIn({ ...ctx.env as Record<string, string>, ...vars }, ["replay"]);
  assertEquals(replay.code, 0, replay.stdout + replay.stderr);
  assertEquals([old.sessions.get("kc-s1")?.commits, old.sessions.get("kc-s2")?.commits], [1, 1]);
});

Deno.test("uninstall --purge after a key change queues the old key's commit under that key: another user's key never sends it", async () => {
  await using dir = await tempDir();
  const { posts, fetcher } = acceptingServer();
  const { t, ctx, watchDir } = await purgeSandbox(dir.path, 2, fetcher);
  const url = "http://127.0.0.1:9";
  const [coder, bo] = [userKey("acme", "coder"), userKey("acme", "bo")];
  // kc-s1 captured under coder's key; the key now configured is bo's.
  const was = JSON.parse(await Deno.readTextFile(`${watchDir}/kc-s1.json`));
  const destination = await sessionDestination({ baseUrl: url, account: "", user: "", apiKey: coder });
  const to = await destinationFor({ baseUrl: url, apiKey: coder });
  await Deno.writeTextFile(`${watchDir}/kc-s1.json`, JSON.stringify({ ...was, destination, to }));
  const env = { ...ctx.env, OPENVIKING_API_KEY: bo };
  posts.length = 0;
  const said = await t.run(runUninstall, { purge: true }, { ...ctx, env });
  assertEquals(posts, [], "nothing went with bo's key");
  assertStringIncludes(said.replace(/\n\s+/g, " "), `OPENVIKING_API_KEY=<acme/coder's key>`);
  const queued = (await queueSummary(`${t.ov}/pending`)).sessions;
  assertEquals(queued.map((q) => [q.sessionId, q.commits]), [["kc-s1", 1]]);
  assertEquals(goesTo(queued[0].to, await destinationFor({ baseUrl: url, apiKey: bo })), false, "not bo's");
  assertTrue(goesTo(queued[0].to, await destinationFor({ baseUrl: url, apiKey: userKey("acme", "coder") })));
});

Deno.test("uninstall --purge keeps the state of a capture cut off mid-send, in a line per session and the command that drops it", async () => {
  await using dir = await tempDir();
  const { posts, fetcher } = acceptingServer();
  const { t, ctx, watchDir } = await purgeSandbox(dir.path, 2, fetcher);
  const was = JSON.parse(await Deno.readTextFile(`${watchDir}/kc-s1.json`));
  for (const sid of ["kc-s1", "kc-s2", "kc-s3"]) {
    const cut = { ...was, ovSession: sid, inflight: { keys: ["k3"], at: 1 } };
    await Deno.writeTextFile(`${watchDir}/${sid}.json`, JSON.stringify(cut));
  }
  posts.length = 0;
  const out = await t.run(runUninstall, { purge: true }, ctx, 1);
  const lines = out.split("\n");
  const cmd = commandName(ctx.env);
  for (const line of lines) {
    assertTrue(textColumns(line) <= 80 || line.startsWith(`    ${cmd} `), `too wide: ${line}`);
  }
  assertEquals(lines.filter((l) => /kc-s\d/.test(l)).length, 3, "one line per session");
  assertMatch(out, /kc-s1: 2 message\(s\), cut off mid-send/);
  assertNotMatch(out, /install --url|--api-key/);
  assertTrue(await exists(`${watchDir}/kc-s1.json`), "its state stays");
  // The command it prints to drop them, as printed.
  assertEquals(lines.filter((l) => l.startsWith("    ")), [
    `    ${cmd} uninstall --purge`,
    `    ${cmd} uninstall --purge --yes`,
  ]);
  await t.run(runUninstall, { purge: true, yes: true }, ctx);
  assertEquals([posts.filter((p) => p.endsWith("/commit")), await exists(`${watchDir}/kc-s1.json`)], [
    [],
    false,
  ]);
});

Deno.test({
  name:
    "uninstall --purge while a detached capture waits on a hung server waits for it: nothing the capture writes comes back after the purge",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const t = await installSandbox(dir.path, { OPENVIKING_URL: fake.url });
    const ctx = t.ctx(await fakeCompiled(dir.path));
    await t.run(runInstall, {}, ctx);
    const env = sandboxEnv(t.home, fake.url, {
      ...{ OPENVIKING_CAPTURE_WAIT_MS: "0", OPENVIKING_COMMIT_POLICY: "balanced" },
      ...{ OPENVIKING_TIMEOUT_MS: "2000", OPENVIKING_IDLE_COMMIT_SECONDS: "1", [WORKER_ENV]: "1" },
    });
    const session = "session_7c0a1f5e-2b1d-4c3e-8f00-00000000f5f5";
    await placeJournal(
      t.home,
      session,
      new JournalBuilder().simpleTurn("a question", "an answer").toString(),
    );
    const payload = (event: string) =>
      JSON.stringify({ hook_event_name: event, session_id: session, cwd: t.home });
    const prompt = JSON.parse(payload("UserPromptSubmit"));
    await hookIn("user-prompt-submit", { env, stdin: JSON.stringify({ ...prompt, prompt: "a question" }) });
    fake.fault({ route: "POST /api/v1/sessions/:id/*", delayMs: 4000 }); // hangs past the client's timeout
    const worker = hookIn("stop", { env, stdin: payload("Stop") });
    const lock = `${t.ov}/hook-state/kimicode/${session}.json.lock`;
    for (let i = 0; i < 200 && !await exists(lock); i++) await new Promise((r) => setTimeout(r, 25));
    assertTrue(await exists(lock), "the capture holds its session's lock, waiting on the server");
    const said = await t.run(runUninstall, { purge: true }, ctx);
    await worker; // its capture, its ledger line, its idle watch: all done
    await new Promise((r) => setTimeout(r, 1500));
    for (const gone of ["hook-state/kimicode", "ledger/kimicode"]) {
      assertEquals(await exists(`${t.ov}/${gone}`), false, `${gone} came back after:\n${said}`);
    }
    // What the capture queued (the server never answered) is where the purge says, with its commit.
    const queued = `${t.ov}/pending/kimicode`;
    assertTrue(await exists(queued), said);
    assertStringIncludes(said.replace(/\n\s+/g, " "), `in ${queued}`);
  },
});

Deno.test("uninstall --purge whose running capture is cut off mid-send while it waits changes nothing, and says to run it again", async () => {
  await using dir = await tempDir();
  const { t, ctx, watchDir } = await purgeSandbox(dir.path, 2, acceptingFetch);
  const file = `${watchDir}/kc-s1.json`;
  const was = JSON.parse(await Deno.readTextFile(file));
  let purge: Promise<string> | undefined;
  await withLock(`${file}.lock`, async () => {
    purge = t.run(runUninstall, { purge: true }, ctx, 1); // waits for this "capture"
    await new Promise((r) => setTimeout(r, 300));
    await Deno.writeTextFile(file, JSON.stringify({ ...was, inflight: { keys: ["k3"], at: 1 } }));
  });
  const said = await purge!;
  assertStringIncludes(said, "kc-s1: 2 message(s) not committed, cut off mid-send meanwhile: run");
  assertTrue(await exists(file), "its state stays");
  assertMatch(said, /nothing was changed/);
  assertStringIncludes(
    await Deno.readTextFile(`${t.kimi}/plugins/installed.json`),
    "openviking-memory",
    said,
  );
});
