/**
 * The profile block's own policy, without processes: the CJK-aware token estimate, fitting a profile into
 * its half of the budget (head and tail with the middle elided, else a cut), the listing of preference and
 * entity memories within what is left, and which user space is read.
 */

import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import { Budget } from "../openviking/client.ts";
import { fetchProfile, memoryLeaves } from "./profile.ts";
import { estimateTokens, fitProfile, renderProfile } from "./digest.ts";
import type { OpenVikingClient } from "../openviking/client.ts";

/** The profile block as the plugin's system prompt renders it; null when unreachable or empty. */
async function profileBlock(client: OpenVikingClient, tokens: number, budget: Budget) {
  const parts = await fetchProfile(client, budget);
  return "ok" in parts ? null : renderProfile(parts, tokens);
}

Deno.test("profile tokens: a quarter per ASCII character, 1.5 per CJK character, rounded up", () => {
  assertEquals(estimateTokens(""), 0);
  assertEquals(estimateTokens("abcd"), 1);
  assertEquals(estimateTokens("abcde"), 2);
  assertEquals(estimateTokens("喜欢"), 3);
  assertEquals(estimateTokens("a喜"), 2);
});

Deno.test("fitProfile: kept within its budget, else its first 8 and last 3 lines when that fits", () => {
  assertEquals(fitProfile("line one\nline two", estimateTokens("line one\nline two")), "line one\nline two");
  const lines = Array.from({ length: 30 }, (_, i) => `fact ${i}: ${"detail ".repeat(5)}`);
  const fitted = fitProfile(lines.join("\n"), 200);
  assertEquals(fitted.split("\n"), [
    ...lines.slice(0, 8),
    "... [profile middle elided] ...",
    ...lines.slice(-3),
  ]);
  assertTrue(estimateTokens(fitted) <= 200);
});

Deno.test("fitProfile: when head and tail do not fit (or there are few lines), it is cut to the budget and says so", () => {
  const fewLines = "word ".repeat(400);
  const cut = fitProfile(fewLines, 50);
  assertMatch(cut, /\n\.\.\. \[profile truncated\]$/);
  assertEquals(cut.length, (50 - 6) * 4 + "\n... [profile truncated]".length, "(budget − 6) tokens of text");
  const wide = Array.from({ length: 20 }, () => "x".repeat(400)).join("\n");
  assertMatch(fitProfile(wide, 100), /\[profile truncated\]$/, "an elided form over the budget is cut");
  const cjk = "喜欢".repeat(100);
  const cjkCut = fitProfile(cjk, 30).replace("\n... [profile truncated]", "");
  assertTrue(estimateTokens(cjkCut) <= 24, "a CJK text is cut by its own token weight, on whole characters");
  assertTrue(cjk.startsWith(cjkCut));
});

Deno.test("renderProfile: the profile takes at most half, the listing what is left, then '+N more'", () => {
  const leaf = (p: string) => ({ path: `${p}.md`, abstract: `abstract of ${p}` });
  const leaves = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => leaf(`${prefix}${i}`));
  const text = renderProfile({
    space: "alice",
    profile: "Alice writes Go.\n".repeat(200),
    preferences: leaves("p", 40),
    entities: leaves("e", 40),
  }, 600)!.text;
  const [profilePart] = text.split("<available-memories>");
  assertTrue(estimateTokens(profilePart) <= 300 + 20, "the profile is fitted into half the budget");
  assertTrue(estimateTokens(text) <= 600 + 60, "the whole block stays near the budget");
  assertMatch(text, /<user-profile uri="viking:\/\/user\/alice\/memories\/profile\.md">/);
  assertMatch(text, /viking:\/\/user\/alice\/memories\/preferences\/\n {4}- p0\.md — abstract of p0/);
  assertMatch(text, /\.\.\. \+\d+ more: use the search MCP tool/);
  const shown = (text.match(/ {4}- [pe]\d+\.md/g) ?? []).length;
  assertTrue(shown > 0 && shown < 80, `some leaves listed, not all (${shown})`);
});

Deno.test("renderProfile: nothing at all is null; a space with markup is percent-encoded in the URI", () => {
  assertEquals(renderProfile({ space: "x", profile: "  ", preferences: [], entities: [] }, 1000), null);
  const text = renderProfile({ space: 'a"b</x>', profile: "p", preferences: [], entities: [] }, 1000)!.text;
  assertMatch(text, /viking:\/\/user\/a%22b%3C%2Fx%3E\/memories\/profile\.md/);
});

Deno.test("memoryLeaves: .md files only (directories and links out), from a list or its `entries`, sorted", () => {
  const entries = [
    { rel_path: "b.md", abstract: "B" },
    { name: "a.md" },
    { uri: "viking://x/dir", isDir: true },
    { rel_path: "notes.txt" },
    { rel_path: "c.md", is_dir: true },
    "junk",
  ];
  const want = [{ path: "a.md", abstract: "" }, { path: "b.md", abstract: "B" }];
  assertEquals(memoryLeaves(entries), want);
  assertEquals(memoryLeaves({ entries }), want);
  // A link the model could follow is no leaf: only a path, or a viking:// URI.
  const links = [{ rel_path: "https://evil.example/x.md" }, { uri: "javascript:alert(1)//.md" }];
  const kept = [{ uri: "viking://u/memories/p/a.md" }, { rel_path: "meeting:2024.md" }];
  assertEquals(memoryLeaves([...links, ...kept]).map((l) => l.path), [
    "meeting:2024.md",
    "viking://u/memories/p/a.md",
  ]);
});

Deno.test("fetchProfile: the space is the status user when it exists, else default, else the only one", async () => {
  for (
    const [user, dirs, space] of [
      ["alice", ["alice", "default"], "alice"],
      ["ghost", ["default", "bob"], "default"],
      ["", ["bob"], "bob"],
      ["carol", [], "carol"],
    ] as const
  ) {
    const { client, calls } = scriptedClient((c) => {
      if (route(c) === "GET /api/v1/system/status") return ok({ user });
      if (c.query?.uri === "viking://user") return ok(dirs.map((name) => ({ name, isDir: true })));
      if (route(c) === "GET /api/v1/content/read") return ok("profile text");
      return ok([]);
    });
    const block = await profileBlock(client, 1000, new Budget(5000));
    assertMatch(block!.text, new RegExp(`viking://user/${space}/memories/profile\\.md`), `${user} ${dirs}`);
    const read = calls.find((c) => route(c) === "GET /api/v1/content/read");
    assertEquals(read?.query?.uri, `viking://user/${space}/memories/profile.md`);
  }
});

Deno.test("fetchProfile: nothing reachable is null; a profile without listings is still a profile", async () => {
  const down = scriptedClient(() => fail("unreachable", 0));
  assertEquals(await profileBlock(down.client, 1000, new Budget(5000)), null);
  const why = await fetchProfile(down.client, new Budget(5000));
  assertEquals("ok" in why ? [why.kind, why.status] : why, ["unreachable", 0], "and why, for the ledger");
  const partial = scriptedClient((c) =>
    route(c) === "GET /api/v1/content/read" ? ok("only the profile") : fail("server", 503)
  );
  assertEquals(await profileBlock(partial.client, 1000, new Budget(5000)), null, "status and listing failed");
  const noDirs = scriptedClient((c) =>
    route(c) === "GET /api/v1/content/read"
      ? ok("only the profile")
      : c.query?.uri === "viking://user"
      ? fail("server", 503)
      : ok({ user: "dana" })
  );
  const block = await profileBlock(noDirs.client, 1000, new Budget(5000));
  assertMatch(block!.text, /only the profile/);
  assertTrue(!block!.text.includes("<available-memories>"));
});
