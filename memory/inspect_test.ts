import { assertEquals } from "../tests/support/assert.ts";
import { byRank } from "./memory.ts";
import {
  changeIn,
  isMemoriesPack,
  isMemoryUri,
  isUnfilledTemplate,
  type Listed,
  memoriesOfTree,
  runOf,
} from "./inspect.ts";
import { zipOf } from "../tests/support/zip.ts";
import type { LedgerEntry } from "./ledger.ts";

const user = { scope: "user", uri: "viking://~/memories" } as const;

Deno.test("a memory is a .md file under the user's memories root or this project's peer's, no dot segment in any encoding", () => {
  const ok = [
    "viking://user/u/memories/preferences/default/tabs.md",
    "viking://user/u/memories/profile.md",
    "viking://~/memories/profile.md",
    "viking://user/u/peers/-p/memories/events/e.md",
    "viking://~/peers/-p/memories/e.md",
  ];
  const refused = [
    "viking://user/u/memories/preferences",
    "viking://user/u/memories/.overview.md",
    "viking://user/u/memories/events/.abstract.md",
    "viking://resources/notes.md",
    "viking://user/u/memories/a b.md",
    "viking://resources/memories/notes.md",
    "viking://user/u/skills/memories/s.md",
    "viking://user/u/peers/-other/memories/e.md",
    "viking://~/memories/../../resources/x.md",
    "viking://~/memories/%2e%2e/%2E%2E/resources/x.md",
    "viking://~/memories/%252e%252e/skills/x.md",
    "viking://~/memories/a%2f..%2f..%2fskills/x.md",
    "viking://~/memories/..\\skills\\x.md",
    "viking://user/../memories/x.md",
    "viking://~/memories/%zz.md",
  ];
  assertEquals(
    [...ok, ...refused].map((u) => isMemoryUri(u, "-p")),
    [...ok, ...refused].map((u) => ok.includes(u)),
  );
  assertEquals(
    isMemoryUri("viking://user/u/peers/-other/memories/e.md"),
    true,
    "any peer when none is named",
  );
  assertEquals(isMemoryUri("viking://user/u/peers/-p/memories/e.md", ""), false, "no peer: no project root");
});

Deno.test("a tree listing's memories: files only, no summaries, the name as text, the kind its folder (else profile)", () => {
  const got = memoriesOfTree(user, [
    { uri: "viking://user/u/memories/events", isDir: true },
    { uri: "viking://user/u/memories/events/.overview.md", isDir: false },
    { uri: "viking://user/u/memories/events/ship_day.md", isDir: false, modTime: "2026-12-01T10:00:00Z" },
    { uri: "viking://user/u/memories/identity.md", isDir: false, modTime: "garbage" },
    { uri: "viking://user/u/peers/-p/memories/events/e.md", isDir: false },
    null,
  ]);
  const at = Date.parse("2026-12-01T10:00:00Z");
  assertEquals(got.map((m) => [m.uri.slice(16), m.scope, m.kind, m.modified, m.text]), [
    ["memories/events/ship_day.md", "user", "events", at, "ship day"],
    ["memories/identity.md", "user", "profile", 0, "identity"],
    ["peers/-p/memories/events/e.md", "user", "events", 0, "e"],
  ]);
});

Deno.test("ranked: best score first, then newest first", () => {
  const m = (uri: string, modified: number, score?: number): Listed => ({
    uri,
    scope: "user",
    kind: "events",
    modified,
    text: uri,
    ...(score === undefined ? {} : { score }),
  });
  assertEquals([m("a", 1), m("b", 3), m("c", 2)].sort(byRank).map((x) => x.uri), ["b", "c", "a"]);
  assertEquals([m("a", 3, 0.2), m("b", 1, 0.9)].sort(byRank).map((x) => x.uri), ["b", "a"]);
});

Deno.test("a memory diff says whether it added or updated a URI; a damaged diff says nothing", () => {
  const diff = JSON.stringify({
    operations: { adds: [{ uri: "viking://a.md" }], updates: [{ uri: "viking://b.md" }], deletes: [] },
  });
  assertEquals(
    [changeIn(diff, "viking://a.md"), changeIn(diff, "viking://b.md"), changeIn(diff, "viking://c.md")],
    ["added", "updated", undefined],
  );
  assertEquals(changeIn("{not json", "viking://a.md"), undefined);
  assertEquals(changeIn('{"operations": {"adds": "x"}}', "viking://a.md"), undefined);
});

Deno.test("the run that started a commit task: the capture that names it, or the queue replay that delivered it", () => {
  const capture = {
    kind: "capture",
    ms: 1,
    rejected: 0,
    event: "Stop",
    turns: 1,
    sent: 1,
    queued: 0,
  } as const;
  const entries: LedgerEntry[] = [
    { ...capture, at: 1, commit: "committed", taskId: "a" },
    { ...capture, at: 2, commit: "queued" },
    {
      kind: "replay",
      at: 3,
      ms: 1,
      rejected: 0,
      replayed: 1,
      messages: 1,
      commitTasks: [{ sessionId: "kc-s", taskId: "b" }],
    },
  ];
  assertEquals([runOf(entries, "a"), runOf(entries, "b"), runOf(entries, "c")], [
    { at: 1, event: "Stop" },
    { at: 3, event: "replay" },
    undefined,
  ]);
});

Deno.test("a pack of the user's memories is a zip whose every entry lies under memories/", () => {
  const pack = zipOf({ "memories/": "", "memories/events/e.md": "x", "memories/.meta.json": "{}" });
  assertEquals(isMemoriesPack(pack), true);
  const html = new TextEncoder().encode("<html><body>Sign in</body></html>");
  assertEquals(
    [
      zipOf({ "skills/": "", "skills/s.md": "x" }),
      zipOf({ "memories/a.md": "x", "resources/b.md": "y" }),
      zipOf({ "memories/../skills/s.md": "x" }),
      zipOf({ "memoriesX/a.md": "x" }),
      zipOf({}),
      html,
      new Uint8Array(10),
      pack.slice(0, pack.length - 5),
    ].map(isMemoriesPack),
    [false, false, false, false, false, false, false, false],
  );
  // The end record counting fewer entries than its central directory holds: Python's zipfile (the server's)
  // reads the directory by its size, so it sees the entries past the count too.
  const hidden = zipOf({ "memories/a.md": "x", "skills/s.md": "y" });
  const end = new DataView(hidden.buffer, hidden.length - 22);
  end.setUint16(8, 1, true);
  end.setUint16(10, 1, true);
  assertEquals(isMemoriesPack(hidden), false, "an entry hidden past the count");
});

Deno.test("the server's unfilled templates (identity.md, soul.md as OpenViking seeds them) are no memories", () => {
  const seeded = [
    "# identity.md - Who Am I?",
    "",
    "_Fill this in during your first conversation. Make it yours._",
    "",
    "- **Name:** ",
    "- **Creature:** AI assistant",
    "- **Vibe:** ",
    "- **Emoji:** ",
    "- **Avatar:** ",
    "",
    "---",
    "",
    "The start of figuring out who you are.",
  ].join("\n");
  const root = "viking://user/default/memories";
  assertEquals(isUnfilledTemplate(`${root}/identity.md`, seeded), true);
  assertEquals(
    isUnfilledTemplate(`${root}/identity.md`, seeded.replace("**Name:** ", "**Name:** Kimi")),
    false,
  );
  assertEquals(isUnfilledTemplate(`${root}/events/identity.md`, seeded), false, "only the seeded file");
});
