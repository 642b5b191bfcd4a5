/**
 * `memories` against the REAL OpenViking 0.5.2 (api_key mode: its pack routes refuse dev mode): the list of
 * the user's and this project's memories, `show` naming the Kimi session, turn and commit a memory came from,
 * `forget` (and again: exit 3), `export` and `import` of OpenViking's own .ovpack bringing a forgotten memory
 * back.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { type RealOpenViking, startRealOrSkip } from "../support/real-openviking.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const PEER = "-work-proj";

/** One call of the server's API as the test's user, its `result`. */
async function api(s: RealOpenViking, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${s.apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const reply = await res.json();
  assertEquals(res.status, 200, JSON.stringify(reply));
  return reply.result;
}

Deno.test({
  name: "memories against the real OpenViking: list, show with provenance, forget, export and import",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startRealOrSkip("memories against the real OpenViking", { auth: "api_key" });
  if (!server) return;
  await using dir = await tempDir();
  try {
    const started = performance.now();
    const env = {
      HOME: dir.path,
      OPENVIKING_URL: server.url,
      OPENVIKING_API_KEY: server.apiKey ?? "",
      OPENVIKING_PEER_ID: PEER,
      PATH: Deno.env.get("PATH") ?? "/usr/bin",
    };
    const cli = (...args: string[]) => runCli(["memories", ...args], { env, clearEnv: true });
    const project = `viking://~/peers/${PEER}/memories/events/release.md`;
    await api(server, "POST", "/api/v1/content/write", {
      uri: project,
      content: "Released 2.0 on Friday.",
      mode: "create",
    });
    const sid = "kc-session_r";
    await api(server, "POST", `/api/v1/sessions/${sid}/messages/batch`, {
      messages: [
        { role: "user", content: "Remember: I prefer tabs over spaces in Go code.", turn_id: "t4" },
        { role: "assistant", content: "Noted.", turn_id: "t4" },
      ],
    });
    const commit = await api(server, "POST", `/api/v1/sessions/${sid}/commit`, {}) as { task_id: string };
    const ledger = `${dir.path}/.openviking/ledger/kimicode`;
    await Deno.mkdir(ledger, { recursive: true });
    const capture = {
      kind: "capture",
      at: Date.now(),
      ms: 1,
      rejected: 0,
      event: "Stop",
      turns: 1,
      sent: 2,
      queued: 0,
      commit: "committed",
      taskId: commit.task_id,
    };
    await Deno.writeTextFile(`${ledger}/session_r.jsonl`, `${JSON.stringify(capture)}\n`);
    const t = Date.now();
    for (;; await new Promise((r) => setTimeout(r, 300))) {
      const task = await api(server, "GET", `/api/v1/tasks/${commit.task_id}`) as { status: string };
      if (task.status === "completed") break;
      assertTrue(task.status !== "failed" && Date.now() - t < 60_000, `the commit's task: ${task.status}`);
    }

    const listed = await cli("--json");
    assertEquals(listed.code, 0, listed.stderr);
    const memories: { uri: string; scope: string; kind: string }[] = JSON.parse(listed.stdout).memories;
    const tabs = memories.find((m) => m.kind === "preferences" && m.scope === "user");
    assertTrue(tabs !== undefined, `the extracted preference is listed: ${listed.stdout}`);
    const release = memories.find((m) => m.scope === "project");
    assertEquals(release?.uri, `viking://user/${server.user}/peers/${PEER}/memories/events/release.md`);
    const text = await cli();
    assertMatch(text.stdout, /memories: this project's and yours/);
    assertStringIncludes(text.stdout, "project: Released 2.0 on Friday.");

    const shown = await cli("show", tabs.uri);
    assertEquals(shown.code, 0, shown.stderr);
    assertStringIncludes(shown.stdout, "I prefer tabs over spaces in Go code.");
    assertStringIncludes(shown.stdout, "- added by commit archive_001 of Kimi session session_r");
    assertStringIncludes(shown.stdout, "turns: t4");
    assertStringIncludes(shown.stdout, `task ${commit.task_id}: our Stop capture`);

    const file = `${dir.path}/memories.ovpack`;
    const exported = await cli("export", file);
    assertEquals(exported.code, 0, exported.stderr);
    assertEquals(
      (await Deno.readFile(file)).subarray(0, 2).join(","),
      "80,75",
      "a zip: OpenViking's .ovpack",
    );

    assertEquals((await cli("forget", tabs.uri)).code, 0);
    const again = await cli("forget", tabs.uri);
    assertEquals(again.code, 3, again.stderr);
    assertEquals((await cli("show", tabs.uri)).code, 3);

    const imported = await cli("import", file, "--json");
    assertEquals(imported.code, 0, imported.stderr);
    const done = JSON.parse(imported.stdout);
    assertEquals(done.uri, `viking://user/${server.user}/memories`);
    assertTrue((await Deno.stat(done.backup)).size > 0, "what the import replaced is kept");
    const back = await api(server, "GET", `/api/v1/content/read?uri=${encodeURIComponent(tabs.uri)}`);
    assertStringIncludes(String(back), "I prefer tabs over spaces in Go code.");
    const forgot = await cli("forget", release!.uri, "--json");
    assertEquals(
      [forgot.code, JSON.parse(forgot.stdout).text],
      [0, "Released 2.0 on Friday."],
      forgot.stderr,
    );
    console.log(`  [real-openviking] memories test body: ${Math.round(performance.now() - started)} ms`);
  } finally {
    await server.stop();
  }
});
