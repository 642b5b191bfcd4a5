import { assertEquals, assertStringIncludes, assertTrue } from "../tests/support/assert.ts";
import { memoriesAdvice, renderListing, renderShown } from "./memories.ts";
import { failure, FAILURE_KINDS } from "../openviking/client.ts";
import { textColumns } from "../lib/columns.ts";
import type { Listed } from "../memory/inspect.ts";

const NOW = Date.parse("2026-12-02T12:00:00Z");
const roots = [
  { scope: "user", uri: "viking://~/memories" },
  { scope: "project", uri: "viking://~/peers/-p/memories" },
] as const;
/** A listed memory of `kind`, `hoursAgo` old, under `viking://user/u/<path>`. */
const memory = (
  path: string,
  kind: string,
  hoursAgo: number,
  text: string,
  scope: Listed["scope"] = "user",
) => ({ uri: `viking://user/u/${path}`, scope, kind, modified: NOW - hoursAgo * 3600_000, text });

Deno.test("the listing: grouped by kind in the order of their newest memory, age and text, the URI below", () => {
  const lines = renderListing({
    roots: [...roots],
    failures: [],
    memories: [
      memory("memories/events/e.md", "events", 2, "Shipped 1.0"),
      memory("peers/-p/memories/preferences/p.md", "preferences", 5, "Use tabs here", "project"),
      memory("memories/events/old.md", "events", 72, "x".repeat(200)),
    ],
  }, NOW);
  assertEquals(lines.slice(0, 6), [
    "3 memories: this project's and yours",
    "",
    "events (2)",
    "  2 h ago  Shipped 1.0",
    "      viking://user/u/memories/events/e.md",
    `  3 d ago  ${"x".repeat(68)}…`,
  ]);
  assertEquals(lines.slice(7, 10), [
    "",
    "preferences (1)",
    "  5 h ago  project: Use tabs here",
  ]);
  assertTrue(lines.every((l) => textColumns(l) <= 80));
});

Deno.test("the listing: one column rule — the text starts two spaces after the widest age or score", () => {
  const listed = [
    memory("memories/events/a.md", "events", 22 / 60, "The billing service"),
    memory("memories/events/b.md", "events", 2, "Shipped 1.0"),
  ];
  const lines = renderListing({ roots: [roots[0]], failures: [], memories: listed }, NOW);
  assertEquals([lines[3], lines[5]], ["  22 min ago  The billing service", "  2 h ago     Shipped 1.0"]);
  const scored = listed.map((m, i) => ({ ...m, score: [0.68, 0.5][i] }));
  const found = renderListing({ roots: [roots[0]], failures: [], memories: scored }, NOW, "billing");
  assertEquals([found[3], found[5]], ["  0.68  The billing service", "  0.50  Shipped 1.0"]);
});

Deno.test("the listing says when there are no project memories, and the roots it could not read", () => {
  const lines = renderListing({
    roots: [roots[0]],
    memories: [memory("memories/events/e.md", "events", 2, "Shipped 1.0")],
    failures: [{ root: roots[0], failure: failure("server", 500, { message: "boom" }) }],
  }, NOW);
  assertEquals(lines[0], "1 memory: yours (no project memories here)");
  assertEquals(lines.slice(-2), [
    "",
    "could not read viking://~/memories: boom",
  ]);
});

Deno.test("a memory shown: its text whole, each commit it came from, and what cannot be known said so", () => {
  const base = { uri: "viking://user/u/memories/events/e.md", text: "line one\nline two", diffsRead: 4 };
  const known = renderShown({
    ...base,
    origins: [{
      session: "kc-session_a",
      kimiSession: "session_a",
      archive: "viking://user/u/sessions/kc-session_a/history/archive_002",
      extractedAt: "2026-12-02T11:00:00Z",
      change: "added",
      turns: ["t1", "t2"],
      taskId: "task-1",
      capture: { at: NOW - 3600_000, event: "Stop" },
    }, {
      session: "other",
      archive: "viking://user/u/sessions/other/history/archive_001",
      change: "updated",
      turns: [],
    }],
  }, NOW).join("\n");
  assertStringIncludes(
    known,
    "viking://user/u/memories/events/e.md\n\nline one\nline two\n\nWhere it came from:\n",
  );
  assertStringIncludes(
    known,
    "- added by commit archive_002 of Kimi session session_a, 2026-12-02T11:00:00Z",
  );
  assertStringIncludes(known, "\n  turn ids t1, t2 (as `turns` lists them)\n");
  assertStringIncludes(known, "task task-1: our Stop capture, 1 h ago");
  assertStringIncludes(known, "- updated by commit archive_001 of OpenViking session other (not ours)");
  assertStringIncludes(known, "its task is gone from the server");
  // One turn id, and no commit naming the memory: tests/cli/memories_command_test.ts's `memories show`.
  const unasked = renderShown({ ...base, origins: [], unknown: "the sessions' memory diffs: boom" }, NOW);
  assertEquals(unasked.at(-1), "- unknown: the sessions' memory diffs: boom");
  // No diff read at all: never "the newest 0 memory diffs".
  const none = renderShown({ ...base, origins: [], diffsRead: 0 }, NOW).join(" ");
  assertStringIncludes(
    none,
    "- no memory diff could be read from the server: which commit made it is unknown",
  );
  assertTrue(!/\b0 memory diffs/.test(none), none);
});

Deno.test("memories' advice: no capture-queue words; a 403 that is no key refusal is access denied to the URI", () => {
  const uri = "viking://~/memories/a.md";
  for (const kind of FAILURE_KINDS) {
    for (const status of [400, 401, 403, 500]) {
      const a = memoriesAdvice(failure(kind, status, { message: "m" }), "http://ov", uri);
      assertTrue(!/queue|sent again|replay/.test(a.fix), `${kind} ${status}: ${a.fix}`);
      assertTrue(a.fix.length > 0 && a.summary.length > 0, `${kind} ${status}`);
    }
  }
  const advice = (status: number, message: string) =>
    memoriesAdvice(failure("auth", status, { code: "PERMISSION_DENIED", message }), "http://ov", uri);
  const denied = advice(403, "access denied for viking://resources");
  assertStringIncludes(denied.summary, `the server denied access to ${uri} (HTTP 403)`);
  assertTrue(!denied.summary.includes("refused the key"), denied.summary);
  const key = memoriesAdvice(failure("auth", 401, { message: "Invalid API key" }), "http://ov", uri);
  assertStringIncludes(key.summary, "the server refused the key");
  // A dev-mode server (no API keys) refuses packs: its words, and the fix is to run it with keys.
  const dev =
    "Admin API requires api_key mode with root_api_key configured. Development mode does not support " +
    'account or user management. You should set server.auth_mode = "api_key" in ov.conf';
  const packs = advice(403, dev);
  assertStringIncludes(packs.summary, "Development mode does not support");
  assertStringIncludes(packs.fix, 'server.auth_mode = "api_key"');
});
