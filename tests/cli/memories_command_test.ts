/**
 * `memories` against the fake OpenViking, in-process through the command table: the list of this
 * project's and the user's memories, search, show with the commit a memory came from (the fake's memory diff,
 * task, archive and our ledger), forget (and a forget of what is gone), export and import (and a server without
 * the pack routes): exit codes and output. A process only where the process matters: a run from the checkout
 * (INIT_CWD). The installed copy runs the table's commands: tests/install/standalone_test.ts (doctor from it).
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { ROOT, runCli } from "../support/run.ts";
import type { JsonRecord } from "../../lib/parsed.ts";
import { runIn } from "./in-process.ts";
import { tempDir } from "../support/temp.ts";
import { zipOf } from "../support/zip.ts";

const PEER = "-work-app";
/** Text with its line wrapping undone. */
const flat = (text: string) => text.replace(/\s+/g, " ");
const USER_MEMORY = "viking://user/default/memories/preferences/default/tabs.md";
const USER_TEXT = "- The user prefers tabs over spaces";
const PROJECT_MEMORY = `viking://user/default/peers/${PEER}/memories/events/build.md`;

/** A sandbox home, and a fake whose commit made `USER_MEMORY` in Kimi session `session_a`, turn t3. */
async function world(fake: FakeOpenViking, home: string) {
  const env = {
    HOME: home,
    OPENVIKING_URL: fake.url,
    OPENVIKING_PEER_ID: PEER,
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const post = (path: string, body?: unknown) =>
    fetch(`${fake.url}/api/v1/sessions/kc-session_a/${path}`, { method: "POST", body: JSON.stringify(body) })
      .then((r) => r.json());
  await post("messages", { role: "user", content: "I like tabs", turn_id: "t3" });
  const commit = await post("commit");
  fake.files.set(USER_MEMORY, USER_TEXT);
  fake.files.set(PROJECT_MEMORY, "The build runs with `make ci`.\x1b]0;owned\x07");
  fake.modTimes.set(PROJECT_MEMORY, new Date(Date.now() - 3600_000).toISOString());
  fake.dirs.set("viking://~/peers", [{ isDir: true, uri: `viking://user/default/peers/${PEER}` }]);
  // Our ledger recorded the capture that started this commit.
  const ledger = `${home}/.openviking/ledger/kimicode`;
  await Deno.mkdir(ledger, { recursive: true });
  const entry = { kind: "capture", at: Date.now() - 60_000, ms: 5, rejected: 0, event: "Stop", turns: 1 };
  const made = { sent: 1, queued: 0, commit: "committed", taskId: commit.result.task_id };
  await Deno.writeTextFile(`${ledger}/session_a.jsonl`, `${JSON.stringify({ ...entry, ...made })}\n`);
  return env;
}

/** `memories <args>` in-process in `env`, with stderr's wrapping undone. */
const mem = (env: Record<string, string>) => async (...args: string[]) => {
  const r = await runIn(env, ["memories", ...args]);
  return { ...r, stderr: flat(r.stderr) };
};

/** A sandbox home and a fake after {@link world}, and `memories` run there. */
async function setUp(fakeOptions = {}) {
  const dir = await tempDir();
  const fake = await FakeOpenViking.start(fakeOptions);
  const env = await world(fake, dir.path);
  return {
    dir: dir.path,
    fake,
    env,
    run: mem(env),
    async [Symbol.asyncDispose]() {
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

Deno.test("memories: the project's and the user's, by kind, newest first, text and JSON; search; usage errors", async () => {
  await using w = await setUp();
  const text = await w.run();
  assertEquals(text.code, 0, text.stderr);
  assertMatch(text.stdout, /^3 memories: this project's and yours/);
  assertMatch(text.stdout, /\n {2}1 h ago {2,}project: The build runs with `make ci`\./);
  assertTrue(!text.stdout.includes("\x1b"), "the server's escape sequence never reaches the terminal");
  const uris = async (...args: string[]) =>
    JSON.parse((await w.run(...args, "--json")).stdout).memories
      .map((m: { uri: string; score?: number }) => m.score === undefined ? m.uri : [m.uri, m.score]);
  const all = [USER_MEMORY, "viking://user/default/memories/profile.md", PROJECT_MEMORY];
  assertEquals((await uris()).sort(), all.sort());
  w.fake.findResults["viking://~/memories"] = [{ uri: USER_MEMORY, level: 2, score: 0.7, abstract: "" }];
  assertEquals(await uris("--search", "tabs"), [[USER_MEMORY, 0.7]]);
  // A hit with no abstract yet: its name as the text, as the listing shows it; its URI once, below.
  const found = (await w.run("--search", "tabs")).stdout;
  assertEquals(found.split(USER_MEMORY).length - 1, 1, found);
  assertMatch(found, /\n {2}0\.70 {2}tabs\n {6}viking:/);
  const unknown = await w.run("list");
  assertEquals(unknown.code, 2);
  assertStringIncludes(unknown.stderr, 'unknown action "list" (show, forget, export or import)');
  assertEquals((await w.run("forget")).code, 2, "forget needs a URI");
});

Deno.test("memories where the server lists no folder for this project: the user's memories only, exit 0", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { HOME: dir.path, OPENVIKING_URL: fake.url, OPENVIKING_PEER_ID: PEER, PATH: "/usr/bin:/bin" };
  const r = await mem(env)();
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /^1 memory: yours \(no project memories here\)\n\nprofile \(1\)\n/);
});

Deno.test("memories against a server that takes requests and answers none: one request, exit 1 with its words, never a count", async () => {
  await using dir = await tempDir();
  // Each connection read, then closed without a reply: a server gone mid-request, without the wait.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const requests: string[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      const buf = new Uint8Array(4096);
      const n = await conn.read(buf).catch(() => null);
      if (n) requests.push(new TextDecoder().decode(buf.subarray(0, n)).split("\r\n")[0]);
      conn.close();
    }
  })().catch(() => {});
  try {
    const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
    const r = await mem({
      HOME: dir.path,
      OPENVIKING_URL: url,
      OPENVIKING_PEER_ID: PEER,
      PATH: "/usr/bin:/bin",
    })();
    assertEquals(r.code, 1, r.stdout);
    assertEquals(r.stdout, "", "no count of memories it could not read");
    assertMatch(
      r.stderr,
      new RegExp(`^openviking-kimi memories: listing failed: OpenViking at ${url} is not`),
    );
    assertEquals(requests, ["GET /api/v1/fs/ls?uri=viking%3A%2F%2F%7E%2Fpeers HTTP/1.1"]);
    // No project peer: the one root it reads fails the same way.
    const alone = await mem({ HOME: dir.path, OPENVIKING_URL: url, OPENVIKING_WORKSPACE_PEER: "false" })();
    assertEquals([alone.code, alone.stdout], [1, ""]);
    assertMatch(alone.stderr, /^openviking-kimi memories: listing failed: /);
  } finally {
    listener.close();
    await serving;
  }
});
Deno.test("memories show: the text in full and the Kimi session, turn, commit and capture it came from", async () => {
  await using w = await setUp();
  const r = await w.run("show", USER_MEMORY);
  assertEquals(r.code, 0, r.stderr);
  for (
    const said of [
      "- The user prefers tabs over spaces",
      "- added by commit archive_001 of Kimi session session_a",
      "turn id t3 (as `turns` lists it)",
      "task task-kc-session_a-1: our Stop capture, 1 min ago",
    ]
  ) assertStringIncludes(r.stdout, said);
  // Once the server has let the task expire, the commit is still known by its diff; the capture is not.
  w.fake.tasks.clear();
  const later = JSON.parse((await w.run("show", USER_MEMORY, "--json")).stdout);
  assertEquals(later.origins.map((o: JsonRecord) => [o.kimiSession, o.taskId]), [["session_a", undefined]]);
  // A memory no diff names says so; an unknown URI is exit 3; a URI that is no memory's, a usage error.
  const direct = await w.run("show", PROJECT_MEMORY);
  assertStringIncludes(direct.stdout, "no commit among the newest 1 memory diffs names it");
  const unknown = await w.run("show", "viking://user/default/memories/nope.md");
  assertEquals([unknown.code, unknown.stdout], [3, ""]);
  assertStringIncludes(unknown.stderr, "the server has no memory there");
  const bad = await w.run("show", "viking://user/default/memories/");
  assertEquals(bad.code, 2);
  assertStringIncludes(bad.stderr, "is not a memory's URI");
  // Larger than a read: show says so; forget deletes it all the same.
  const big = "viking://user/default/memories/events/big.md";
  w.fake.files.set(big, "x".repeat((1 << 20) + 10));
  const shown = await w.run("show", big);
  assertEquals(shown.code, 1, shown.stdout);
  assertStringIncludes(shown.stderr, "is too large to show");
  const forgot = await w.run("forget", big, "--json");
  assertEquals([forgot.code, JSON.parse(forgot.stdout).forgotten, w.fake.files.has(big)], [0, true, false]);
  w.fake.files.set(big, "x".repeat((1 << 20) + 10));
  assertStringIncludes(flat((await w.run("forget", big)).stdout), "it was too large to show");
});

Deno.test("memories forget: only a memory here (exit 2); a failed read deletes nothing; gone is exit 3", async () => {
  await using w = await setUp();
  const deletes = () => w.fake.requestsTo("DELETE /api/v1/fs").length;
  const skill = "viking://user/default/skills/memories/deploy.md";
  w.fake.files.set(skill, "a skill");
  for (const uri of [skill, "viking://~/memories/%2e%2e/skills/memories/deploy.md"]) {
    const r = await w.run("forget", uri);
    assertEquals(r.code, 2, `${uri}: ${r.stdout}`);
    assertStringIncludes(r.stderr, `viking://~/memories/ or viking://~/peers/${PEER}/memories/`);
  }
  assertEquals([deletes(), w.fake.files.get(skill)], [0, "a skill"]);
  w.fake.fault({ route: "GET /api/v1/content/read", status: 500, times: 1 });
  const unread = await w.run("forget", PROJECT_MEMORY);
  assertEquals(unread.code, 1, unread.stdout);
  assertMatch(unread.stderr, /reading it failed.*nothing was deleted/);
  assertTrue(!/delete failed|queue/.test(unread.stderr), unread.stderr);
  assertEquals([deletes(), w.fake.files.has(PROJECT_MEMORY)], [0, true]);
  const r = await w.run("forget", PROJECT_MEMORY, "--json");
  assertEquals([r.code, JSON.parse(r.stdout).forgotten, w.fake.files.has(PROJECT_MEMORY)], [0, true, false]);
  const again = await w.run("forget", PROJECT_MEMORY);
  assertEquals(again.code, 3);
  assertStringIncludes(again.stderr, "already gone; nothing was deleted");
  assertEquals(deletes(), 1, "nothing is asked to delete what is gone");
  // The URI on a line of its own: a long one never splits "it said:" across two.
  const text = await w.run("forget", USER_MEMORY);
  assertEquals(text.stdout.split("\n").slice(0, 3), [`forgot ${USER_MEMORY}`, "it said:", `  ${USER_TEXT}`]);
});

/** The files of directory `dir`. */
const filesIn = async (dir: string) => (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();

Deno.test("memories export/import: the round trip, the replaced memories kept; no file overwritten; relative files the user's", async () => {
  await using w = await setUp();
  const file = `${w.dir}/mine.ovpack`;
  const out = await w.run("export", file);
  assertEquals(out.code, 0, out.stderr);
  assertStringIncludes(out.stdout, `exported your memories to ${file}`);
  assertEquals((await w.run("export", file)).code, 2, "an existing file is never overwritten");
  const newer = "viking://user/default/memories/events/new.md";
  w.fake.files.delete(USER_MEMORY);
  w.fake.files.set(newer, "made after the export");
  const imp = await w.run("import", file, "--json");
  assertEquals(imp.code, 0, imp.stderr);
  const done = JSON.parse(imp.stdout);
  assertEquals(done.uri, "viking://user/default/memories");
  assertEquals(w.fake.files.get(USER_MEMORY), "- The user prefers tabs over spaces", "the export came back");
  assertTrue(!w.fake.files.has(newer), "import replaced the root");
  // What it replaced is in the backup: importing that brings the newer memory back.
  assertMatch(done.backup, /memories-before-import-.*\.ovpack$/);
  assertEquals((await w.run("import", done.backup)).code, 0);
  assertEquals(w.fake.files.get(newer), "made after the export");
  // Run from the checkout, a relative file is the user's directory's (INIT_CWD), not the checkout's.
  const env = { ...w.env, INIT_CWD: w.dir };
  assertEquals(
    (await runCli(["memories", "export", "rel.ovpack"], { env, clearEnv: true, cwd: ROOT })).code,
    0,
  );
  assertTrue((await Deno.stat(`${w.dir}/rel.ovpack`)).isFile, "written where the user ran it");
  assertTrue(!(await Deno.stat(`${ROOT}/rel.ovpack`).then(() => true, () => false)), "not in the checkout");
});

Deno.test("memories import of a pack whose root is not memories/, or of no file: refused, nothing sent", async () => {
  await using w = await setUp();
  const skill = "viking://user/default/skills/deploy.md";
  w.fake.files.set(skill, "the user's deploy skill");
  const [file, mixed] = [`${w.dir}/skills.ovpack`, `${w.dir}/mixed.ovpack`];
  await Deno.writeFile(file, zipOf({ "skills/": "", "skills/deploy.md": "replaced" }));
  await Deno.writeFile(mixed, zipOf({ "memories/a.md": "x", "skills/deploy.md": "replaced" }));
  const listed = await filesIn(w.dir);
  for (const bad of [file, mixed, "/dev/zero", w.dir, `${w.dir}/none.ovpack`]) {
    const r = await w.run("import", bad);
    assertEquals(r.code, 2, `${bad}: ${r.stdout}${r.stderr}`);
    assertStringIncludes(r.stderr, "nothing was imported");
  }
  assertStringIncludes(
    (await w.run("import", file)).stderr,
    "not a pack of your memories (every entry under memories/)",
  );
  assertEquals(w.fake.files.get(skill), "the user's deploy skill", "the other folder is untouched");
  assertEquals(w.fake.requestsTo("POST /api/v1/resources/temp_upload").length, 0, "nothing is sent");
  assertEquals(w.fake.requestsTo("POST /api/v1/pack/export").length, 0, "no backup is made of it");
  assertEquals(await filesIn(w.dir), listed, "no backup file left");
});

Deno.test("memories export/import against a page, not a pack, or a refused import: nothing written, no backup left; an import it may have half done: the backup kept", async () => {
  await using w = await setUp();
  const good = `${w.dir}/good.ovpack`;
  assertEquals((await w.run("export", good)).code, 0);
  const listed = await filesIn(w.dir);
  const page = { status: 200, headers: { "content-type": "text/html" }, body: "<html>Sign in</html>" };
  w.fake.fault({ route: "POST /api/v1/pack/export", raw: page, times: 2 });
  const out = await w.run("export", `${w.dir}/page.ovpack`);
  assertEquals(out.code, 1, out.stdout);
  assertStringIncludes(out.stderr, "not a pack of the user's memories");
  const imp = await w.run("import", good);
  assertEquals(imp.code, 1, imp.stdout);
  assertStringIncludes(imp.stderr, "nothing was imported");
  assertEquals(w.fake.requestsTo("POST /api/v1/pack/import").length, 0, "no import without a real backup");
  assertEquals(await filesIn(w.dir), listed, "no file written, no page kept as a backup");
  w.fake.fault({ route: "POST /api/v1/pack/import", status: 400, times: 1 });
  const refused = await w.run("import", good);
  assertEquals(refused.code, 1, refused.stdout);
  assertStringIncludes(refused.stderr, "nothing was replaced");
  assertEquals(await filesIn(w.dir), listed, "no backup of what was not replaced");
  w.fake.fault({ route: "POST /api/v1/pack/import", status: 500, times: 1 });
  const broke = await w.run("import", good);
  assertEquals(broke.code, 1, broke.stdout);
  const kept = (await filesIn(w.dir)).filter((f) => !listed.includes(f));
  assertEquals(kept.length, 1, "the backup is kept when the import may have replaced something");
  assertStringIncludes(broke.stderr, kept[0]);
});

Deno.test("memories export/import on a server without the pack routes: exit 4, nothing written", async () => {
  await using w = await setUp({ noPack: true });
  const file = `${w.dir}/mine.ovpack`;
  const out = await w.run("export", file);
  assertEquals(out.code, 4, out.stderr);
  assertStringIncludes(out.stderr, "has no export route");
  assertTrue(!(await Deno.stat(file).then(() => true, () => false)), "no file written");
  await Deno.writeFile(file, zipOf({ "memories/": "", "memories/a.md": "a memory" }));
  const before = [...w.fake.files.keys()];
  const imp = await w.run("import", file, "--json");
  assertEquals([imp.code, JSON.parse(imp.stdout).error.kind], [4, "missing-route"]);
  assertEquals([...w.fake.files.keys()], before, "nothing lost");
});

Deno.test("memories --search: the text goes to the server redacted like a recall query", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = { HOME: dir.path, OPENVIKING_URL: fake.url, PATH: Deno.env.get("PATH") ?? "/usr/bin" };
  const token = ["ghp_", "ZX7DfL3FuoXmsC4vynNdwifV0xbWhEpIjsXU"].join("");
  const r = await mem(env)(
    "--search",
    `deploy with ${token} and PIN <private>4711-2231-9988</private>`,
    "--json",
  );
  assertEquals(r.code, 0, r.stderr);
  const queries = fake.requestsTo("POST /api/v1/search/find").map((r) => (r.body as { query: string }).query);
  assertTrue(queries.length > 0, "search asked the server");
  for (const q of queries) assertEquals(q, "deploy with [REDACTED] and PIN");
});

Deno.test("memories --search leaves the server's unfilled templates out as the list does, unnamed", async () => {
  await using w = await setUp();
  const identity = "viking://user/default/memories/identity.md";
  const soul = "viking://user/default/memories/soul.md";
  w.fake.files.set(
    identity,
    "# identity.md - Who Am I?\n\n_Fill this in during your first conversation. Make it yours._\n\n" +
      "- **Name:** \n- **Creature:** AI assistant\n- **Vibe:** \n- **Emoji:** \n- **Avatar:** \n\n---\n\n" +
      "The start of figuring out who you are.",
  );
  w.fake.files.set(soul, "# soul.md - Who You Are\nFilled in: terse, exact.");
  w.fake.findResults["viking://~/memories"] = [
    { uri: identity, level: 2, score: 0.71, abstract: "" },
    { uri: soul, level: 2, score: 0.69, abstract: "" },
    { uri: USER_MEMORY, level: 2, score: 0.6, abstract: "" },
  ];
  const json = JSON.parse((await w.run("--search", "who am I", "--json")).stdout);
  assertEquals(json.memories.map((m: { uri: string }) => m.uri), [soul, USER_MEMORY]);
  assertEquals("templates" in json, false);
  const text = await w.run("--search", "who am I");
  assertMatch(text.stdout, /^2 memories found for "who am I"/);
  assertEquals(text.stdout.includes(identity), false, text.stdout);
});

Deno.test("memories import where its backup cannot be written: exit 1 (the world, not the command line), nothing imported", async () => {
  await using w = await setUp();
  // A directory so deep that the pack's path is readable but its backup's, beside it, is too long to write.
  let deep = w.dir;
  while (deep.length < 4060) deep = `${deep}/${"d".repeat(Math.min(200, 4059 - deep.length))}`;
  await Deno.mkdir(deep, { recursive: true });
  const file = `${deep}/p.ovpack`;
  await Deno.writeFile(file, zipOf({ "memories/": "", "memories/a.md": "a memory" }));
  const r = await w.run("import", file);
  assertEquals(r.code, 1, r.stderr);
  assertMatch(r.stderr, /cannot keep what import would replace in .*; nothing was imported/);
  assertEquals(w.fake.requestsTo("POST /api/v1/pack/import").length, 0, "nothing is sent");
});
