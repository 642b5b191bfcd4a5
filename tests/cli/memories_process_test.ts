/**
 * `memories` against the fake OpenViking: the list of this project's and the user's memories, search, show
 * with the commit a memory came from (the fake's memory diff, task, archive and our ledger), forget (and a
 * forget of what is gone), export and import (and a server without the pack routes): exit codes and output.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { ROOT, runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { zipOf } from "../support/zip.ts";

const PEER = "-work-app";
/** Text with its line wrapping undone. */
const flat = (text: string) => text.replace(/\s+/g, " ");
const USER_MEMORY = "viking://user/default/memories/preferences/default/tabs.md";
const PROJECT_MEMORY = `viking://user/default/peers/${PEER}/memories/events/build.md`;

/** A sandbox home, and a fake whose commit made `USER_MEMORY` in Kimi session `session_a`, turn t3. */
async function world(fake: FakeOpenViking, home: string) {
  const env = {
    HOME: home,
    OPENVIKING_URL: fake.url,
    OPENVIKING_PEER_ID: PEER,
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const sid = "kc-session_a";
  await fetch(`${fake.url}/api/v1/sessions/${sid}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role: "user", content: "I like tabs", turn_id: "t3" }),
  }).then((r) => r.body?.cancel());
  const commit = await fetch(`${fake.url}/api/v1/sessions/${sid}/commit`, { method: "POST" }).then((r) =>
    r.json()
  );
  fake.files.set(USER_MEMORY, "- The user prefers tabs over spaces");
  fake.files.set(PROJECT_MEMORY, "The build runs with `make ci`.\x1b]0;owned\x07");
  fake.modTimes.set(PROJECT_MEMORY, new Date(Date.now() - 3600_000).toISOString());
  fake.dirs.set("viking://~/peers", [{ isDir: true, uri: `viking://user/default/peers/${PEER}` }]);
  // Our ledger recorded the capture that started this commit.
  const ledger = `${home}/.openviking/ledger/kimicode`;
  await Deno.mkdir(ledger, { recursive: true });
  const entry = {
    kind: "capture",
    at: Date.now() - 60_000,
    ms: 5,
    rejected: 0,
    event: "Stop",
    turns: 1,
    sent: 1,
    queued: 0,
    commit: "committed",
    taskId: commit.result.task_id,
  };
  await Deno.writeTextFile(`${ledger}/session_a.jsonl`, `${JSON.stringify(entry)}\n`);
  return env;
}

Deno.test("memories: the project's and the user's, by kind, newest first, text and JSON; search", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const text = await runCli(["memories"], { env, clearEnv: true });
  assertEquals(text.code, 0, text.stderr);
  assertMatch(text.stdout, /^3 memories: this project's and yours/);
  assertMatch(text.stdout, /\n {2}1 h ago {2,}project: The build runs with `make ci`\./);
  assertTrue(!text.stdout.includes("\x1b"), "the server's escape sequence never reaches the terminal");
  const uris = async (args: string[]) =>
    JSON.parse((await runCli(["memories", ...args, "--json"], { env, clearEnv: true })).stdout).memories
      .map((m: { uri: string; score?: number }) => m.score === undefined ? m.uri : [m.uri, m.score]);
  const all = [USER_MEMORY, "viking://user/default/memories/profile.md", PROJECT_MEMORY];
  assertEquals((await uris([])).sort(), all.sort());
  fake.findResults["viking://~/memories"] = [{ uri: USER_MEMORY, level: 2, score: 0.7, abstract: "" }];
  assertEquals(await uris(["--search", "tabs"]), [[USER_MEMORY, 0.7]]);
});

Deno.test("memories where the server lists no folder for this project: the user's memories only, exit 0", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { HOME: dir.path, OPENVIKING_URL: fake.url, OPENVIKING_PEER_ID: PEER, PATH: "/usr/bin:/bin" };
  const r = await runCli(["memories"], { env, clearEnv: true });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /^1 memory: yours \(no project memories here\)\n\nprofile \(1\)\n/);
  const unknown = await runCli(["memories", "list"], { env, clearEnv: true });
  assertEquals(unknown.code, 2);
  assertStringIncludes(flat(unknown.stderr), 'unknown action "list" (show, forget, export or import)');
  assertEquals((await runCli(["memories", "forget"], { env, clearEnv: true })).code, 2, "forget needs a URI");
});

Deno.test("memories show: the text in full and the Kimi session, turn, commit and capture it came from", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const r = await runCli(["memories", "show", USER_MEMORY], { env, clearEnv: true });
  assertEquals(r.code, 0, r.stderr);
  assertStringIncludes(r.stdout, "- The user prefers tabs over spaces");
  assertStringIncludes(r.stdout, "- added by commit archive_001 of Kimi session session_a");
  assertStringIncludes(r.stdout, "turn id t3 (as `turns` lists it)");
  assertStringIncludes(r.stdout, "task task-kc-session_a-1: our Stop capture, 1 min ago");
  // Once the server has let the task expire, the commit is still known by its diff; the capture is not.
  fake.tasks.clear();
  const later = JSON.parse(
    (await runCli(["memories", "show", USER_MEMORY, "--json"], { env, clearEnv: true })).stdout,
  );
  assertEquals(later.origins.length, 1);
  assertEquals([later.origins[0].kimiSession, later.origins[0].taskId], ["session_a", undefined]);
  // A memory no diff names says so; an unknown URI is exit 3; a URI that is no memory's, a usage error.
  const direct = await runCli(["memories", "show", PROJECT_MEMORY], { env, clearEnv: true });
  assertStringIncludes(direct.stdout, "no commit among the newest 1 memory diffs names it");
  const unknown = await runCli(["memories", "show", "viking://user/default/memories/nope.md"], {
    env,
    clearEnv: true,
  });
  assertEquals([unknown.code, unknown.stdout], [3, ""]);
  assertStringIncludes(flat(unknown.stderr), "the server has no memory there");
  const bad = await runCli(["memories", "show", "viking://user/default/memories/"], { env, clearEnv: true });
  assertEquals(bad.code, 2);
  assertStringIncludes(flat(bad.stderr), "is not a memory's URI");
});

Deno.test("memories show/forget of a memory larger than a read: show says so; forget deletes it", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const big = "viking://user/default/memories/events/big.md";
  fake.files.set(big, "x".repeat((1 << 20) + 10));
  const shown = await runCli(["memories", "show", big], { env, clearEnv: true });
  assertEquals(shown.code, 1, shown.stdout);
  assertStringIncludes(flat(shown.stderr), "is too large to show");
  assertTrue(!shown.stderr.includes("OPENVIKING_RECALL_LIMIT"), shown.stderr);
  const r = await runCli(["memories", "forget", big, "--json"], { env, clearEnv: true });
  assertEquals(r.code, 0, r.stdout + r.stderr);
  assertEquals(JSON.parse(r.stdout).forgotten, true);
  assertTrue(!fake.files.has(big), "deleted");
  fake.files.set(big, "x".repeat((1 << 20) + 10));
  const text = await runCli(["memories", "forget", big], { env, clearEnv: true });
  assertStringIncludes(flat(text.stdout), "it was too large to show");
});

Deno.test("memories forget: only a memory here (exit 2); a failed read deletes nothing; gone is exit 3", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const forget = (uri: string, json = false) =>
    runCli(["memories", "forget", uri, ...(json ? ["--json"] : [])], { env, clearEnv: true });
  const deletes = () => fake.requestsTo("DELETE /api/v1/fs").length;
  const skill = "viking://user/default/skills/memories/deploy.md";
  fake.files.set(skill, "a skill");
  for (const uri of [skill, "viking://~/memories/%2e%2e/skills/memories/deploy.md"]) {
    const r = await forget(uri);
    assertEquals(r.code, 2, `${uri}: ${r.stdout}`);
    assertStringIncludes(flat(r.stderr), `viking://~/memories/ or viking://~/peers/${PEER}/memories/`);
  }
  assertEquals([deletes(), fake.files.get(skill)], [0, "a skill"]);

  fake.fault({ route: "GET /api/v1/content/read", status: 500, times: 1 });
  const unread = await forget(PROJECT_MEMORY);
  assertEquals(unread.code, 1, unread.stdout);
  assertStringIncludes(flat(unread.stderr), "reading it failed");
  assertStringIncludes(flat(unread.stderr), "nothing was deleted");
  assertTrue(!/delete failed|queue/.test(flat(unread.stderr)), unread.stderr);
  assertEquals([deletes(), fake.files.has(PROJECT_MEMORY)], [0, true]);

  const r = await forget(PROJECT_MEMORY, true);
  assertEquals([r.code, JSON.parse(r.stdout).forgotten, fake.files.has(PROJECT_MEMORY)], [0, true, false]);
  const again = await forget(PROJECT_MEMORY);
  assertEquals(again.code, 3);
  assertStringIncludes(flat(again.stderr), "already gone; nothing was deleted");
  assertEquals(deletes(), 1, "nothing is asked to delete what is gone");
});

Deno.test("memories export/import: the pack round trip, the replaced memories kept; no file overwritten", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const file = `${dir.path}/mine.ovpack`;
  const out = await runCli(["memories", "export", file], { env, clearEnv: true });
  assertEquals(out.code, 0, out.stderr);
  assertStringIncludes(out.stdout, `exported your memories to ${file}`);
  const again = await runCli(["memories", "export", file], { env, clearEnv: true });
  assertEquals(again.code, 2, "an existing file is never overwritten");
  fake.files.delete(USER_MEMORY);
  fake.files.set("viking://user/default/memories/events/new.md", "made after the export");
  const imp = await runCli(["memories", "import", file, "--json"], { env, clearEnv: true });
  assertEquals(imp.code, 0, imp.stderr);
  const done = JSON.parse(imp.stdout);
  assertEquals(done.uri, "viking://user/default/memories");
  assertEquals(fake.files.get(USER_MEMORY), "- The user prefers tabs over spaces", "the export came back");
  assertTrue(!fake.files.has("viking://user/default/memories/events/new.md"), "import replaced the root");
  // What it replaced is in the backup: importing that brings the newer memory back.
  assertMatch(done.backup, /memories-before-import-.*\.ovpack$/);
  assertEquals((await runCli(["memories", "import", done.backup], { env, clearEnv: true })).code, 0);
  assertEquals(fake.files.get("viking://user/default/memories/events/new.md"), "made after the export");
});

/** The files of directory `dir`. */
const filesIn = async (dir: string) => (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();

Deno.test("memories import of a pack whose root is not memories/, or of no file: refused, nothing sent", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const skill = "viking://user/default/skills/deploy.md";
  fake.files.set(skill, "the user's deploy skill");
  const file = `${dir.path}/skills.ovpack`;
  await Deno.writeFile(file, zipOf({ "skills/": "", "skills/deploy.md": "replaced" }));
  const mixed = `${dir.path}/mixed.ovpack`;
  await Deno.writeFile(mixed, zipOf({ "memories/a.md": "x", "skills/deploy.md": "replaced" }));
  const listed = await filesIn(dir.path);
  for (const bad of [file, mixed, "/dev/zero", dir.path]) {
    const r = await runCli(["memories", "import", bad], { env, clearEnv: true, timeoutMs: 20_000 });
    assertEquals(r.code, 2, `${bad}: ${r.stdout}${r.stderr}`);
    assertStringIncludes(flat(r.stderr), "nothing was imported");
  }
  assertStringIncludes(
    flat((await runCli(["memories", "import", file], { env, clearEnv: true })).stderr),
    "not a pack of your memories (every entry under memories/)",
  );
  assertEquals(fake.files.get(skill), "the user's deploy skill", "the other folder is untouched");
  assertEquals(fake.requestsTo("POST /api/v1/resources/temp_upload").length, 0, "nothing is sent");
  assertEquals(fake.requestsTo("POST /api/v1/pack/export").length, 0, "no backup is made of it");
  assertEquals(await filesIn(dir.path), listed, "no backup file left");
});

Deno.test("memories export/import against a page, not a pack, or a refused import: nothing written, no backup left; an import it may have half done: the backup kept", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = await world(fake, dir.path);
  const good = `${dir.path}/good.ovpack`;
  assertEquals((await runCli(["memories", "export", good], { env, clearEnv: true })).code, 0);
  const listed = await filesIn(dir.path);
  const page = { status: 200, headers: { "content-type": "text/html" }, body: "<html>Sign in</html>" };
  fake.fault({ route: "POST /api/v1/pack/export", raw: page, times: 2 });
  const out = await runCli(["memories", "export", `${dir.path}/page.ovpack`], { env, clearEnv: true });
  assertEquals(out.code, 1, out.stdout);
  assertStringIncludes(flat(out.stderr), "not a pack of the user's memories");
  const imp = await runCli(["memories", "import", good], { env, clearEnv: true });
  assertEquals(imp.code, 1, imp.stdout);
  assertStringIncludes(flat(imp.stderr), "nothing was imported");
  assertEquals(fake.requestsTo("POST /api/v1/pack/import").length, 0, "no import without a real backup");
  assertEquals(await filesIn(dir.path), listed, "no file written, no page kept as a backup");
  fake.fault({ route: "POST /api/v1/pack/import", status: 400, times: 1 });
  const refused = await runCli(["memories", "import", good], { env, clearEnv: true });
  assertEquals(refused.code, 1, refused.stdout);
  assertStringIncludes(flat(refused.stderr), "nothing was replaced");
  assertEquals(await filesIn(dir.path), listed, "no backup of what was not replaced");
  fake.fault({ route: "POST /api/v1/pack/import", status: 500, times: 1 });
  const broke = await runCli(["memories", "import", good], { env, clearEnv: true });
  assertEquals(broke.code, 1, broke.stdout);
  const kept = (await filesIn(dir.path)).filter((f) => !listed.includes(f));
  assertEquals(kept.length, 1, "the backup is kept when the import may have replaced something");
  assertStringIncludes(flat(broke.stderr), kept[0]);
});

Deno.test("memories export from the checkout: a relative file is the user's directory's, not the checkout's", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { ...await world(fake, dir.path), INIT_CWD: dir.path };
  const r = await runCli(["memories", "export", "rel.ovpack"], { env, clearEnv: true, cwd: ROOT });
  assertEquals(r.code, 0, r.stderr);
  assertTrue((await Deno.stat(`${dir.path}/rel.ovpack`)).isFile, "written where the user ran it");
  assertTrue(!(await Deno.stat(`${ROOT}/rel.ovpack`).then(() => true, () => false)), "not in the checkout");
});

Deno.test("memories export/import on a server without the pack routes: exit 4, nothing written", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ noPack: true });
  const env = await world(fake, dir.path);
  const file = `${dir.path}/mine.ovpack`;
  const out = await runCli(["memories", "export", file], { env, clearEnv: true });
  assertEquals(out.code, 4, out.stderr);
  assertStringIncludes(flat(out.stderr), "has no export route");
  assertTrue(!(await Deno.stat(file).then(() => true, () => false)), "no file written");
  await Deno.writeFile(file, zipOf({ "memories/": "", "memories/a.md": "a memory" }));
  const before = [...fake.files.keys()];
  const imp = await runCli(["memories", "import", file, "--json"], { env, clearEnv: true });
  assertEquals(imp.code, 4);
  assertEquals(JSON.parse(imp.stdout).error.kind, "missing-route");
  assertEquals([...fake.files.keys()], before, "nothing lost");
  const missing = await runCli(["memories", "import", `${dir.path}/none.ovpack`], { env, clearEnv: true });
  assertEquals(missing.code, 2);
});

Deno.test("the installed command (the bundled copy install places) runs memories too", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { HOME: dir.path, KIMI_CODE_HOME: `${dir.path}/.kimi-code`, PATH: "/usr/bin:/bin" };
  const install = await runCli(["install", "--url", fake.url], { env, clearEnv: true, timeoutMs: 120_000 });
  assertEquals(install.code, 0, install.stderr);
  const out = await new Deno.Command(`${dir.path}/.local/bin/openviking-kimi`, {
    args: ["memories", "--json"],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const listed = JSON.parse(new TextDecoder().decode(out.stdout));
  assertEquals(listed.memories.map((m: { uri: string }) => m.uri), [
    "viking://user/default/memories/profile.md",
  ]);
});

Deno.test("memories --search: the text goes to the server redacted like a recall query", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { HOME: dir.path, OPENVIKING_URL: fake.url, PATH: Deno.env.get("PATH") ?? "/usr/bin" };
  const token = ["ghp_", "ZX7DfL3FuoXmsC4vynNdwifV0xbWhEpIjsXU"].join("");
  const run = await runCli(
    ["memories", "--search", `deploy with ${token} and PIN <private>4711-2231-9988</private>`, "--json"],
    { env, clearEnv: true },
  );
  assertEquals(run.code, 0, run.stderr);
  const queries = fake.requestsTo("POST /api/v1/search/find").map((r) => (r.body as { query: string }).query);
  assertTrue(queries.length > 0, "search asked the server");
  for (const q of queries) assertEquals(q, "deploy with [REDACTED] and PIN");
});
