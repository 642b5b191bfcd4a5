/**
 * What the prompt hook prints for a text (hooks/inject.ts), without processes: memories the session already
 * has are left out whatever the server does with `exclude_uris`; nothing new prints nothing; the same prompt
 * again asks nothing; the profile and the memories share one digest; the full format keeps the server's
 * text when nothing is left out; and the preview touches no state.
 */

import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import { DEFAULT_ENTRY, FAKE_DIGEST_FIRST, FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { tempDir } from "../tests/support/temp.ts";
import { Budget } from "../openviking/client.ts";
import { loadConfig } from "../openviking/config.ts";
import { injectionFor, type InjectionRequest } from "./inject.ts";
import { renderElement } from "./recall.ts";

const SEARCH = "POST /api/v1/search/search";
const entry = (n: number, text = `memory ${n}`) => ({
  uri: `viking://user/default/memories/events/e${n}.md`,
  category: "events",
  score: 0.9 - n / 100,
  detail: "abstract",
  text,
});
const rendered = (entries: ReturnType<typeof entry>[]) => entries.map(renderElement).join("\n");

const config = async (env: Record<string, string> = {}) =>
  (await loadConfig({ HOME: "/nonexistent-home", ...env })).config;
/** The digest block of `lines`. */
const block = (...lines: string[]) => `<openviking-context>\n${lines.join("\n")}\n</openviking-context>\n`;

const request = (over: Partial<InjectionRequest> = {}): InjectionRequest => ({
  query: "what did we decide about the cache?",
  sessionId: "kc-s",
  injected: [],
  profile: false,
  afterCompaction: false,
  budget: new Budget(5000),
  stateDir: "",
  ...over,
});

/** A server whose context face lists `entries` whatever it is asked to exclude. */
const listing = (entries: ReturnType<typeof entry>[]) =>
  scriptedClient((c) =>
    route(c) === SEARCH
      ? ok({ entries, rendered: rendered(entries), digest: "" })
      : fail("missing-route", 404)
  );

Deno.test("inject: memories the session already has are left out, even when the server sends them again", async () => {
  const { client, calls } = listing([entry(1), entry(2), entry(3)]);
  const inj = await injectionFor(client, await config(), request({ injected: [entry(1).uri, entry(3).uri] }));
  assertEquals(inj.stdout, block(`- memory 2 (${entry(2).uri})`));
  assertEquals(inj.suppressed, [entry(1).uri, entry(3).uri]);
  assertEquals(inj.injected, [{
    uri: entry(2).uri,
    score: entry(2).score,
    chars: `- memory 2 (${entry(2).uri})`.length,
  }]);
  assertEquals(inj.recall, "context");
  assertEquals((calls[0].body as { exclude_uris: string[] }).exclude_uris, [entry(1).uri, entry(3).uri]);
});

Deno.test("inject: nothing new is nothing printed; a too short prompt asks nothing", async () => {
  const { client } = listing([entry(1)]);
  const inj = await injectionFor(client, await config(), request({ injected: [entry(1).uri] }));
  assertEquals([inj.stdout, inj.injected, inj.suppressed], ["", [], [entry(1).uri]]);
  const quiet = listing([entry(1)]);
  const short = await injectionFor(quiet.client, await config(), request({ query: "ok" }));
  assertEquals([short.stdout, short.recall, quiet.calls.length], ["", "skipped", 0]);
});

Deno.test("inject: the same prompt again uses its kept recall without asking, and still prints no second copy", async () => {
  const { client, calls } = listing([]);
  const kept = { source: "context" as const, memories: [{ uri: entry(1).uri, text: "memory 1" }] };
  const again = await injectionFor(
    client,
    await config(),
    request({ reuse: kept, injected: [entry(1).uri] }),
  );
  assertEquals([again.stdout, again.recall, again.found, calls.length], ["", "reused", undefined, 0]);
  // After a compaction the session's set was cleared: the kept memory comes back, still without a request.
  const after = await injectionFor(client, await config(), request({ reuse: kept }));
  assertEquals(after.stdout, block(`- memory 1 (${entry(1).uri})`));
  assertEquals(calls.length, 0);
});

Deno.test("inject: at most the limit of memories and the characters allowed; the rest comes on a later prompt", async () => {
  const long = "a long memory text about the tile cache and how its key ignores the style version ".repeat(3);
  const entries = Array.from({ length: 9 }, (_, i) => entry(i, long));
  const { client } = listing(entries);
  const inj = await injectionFor(client, await config(), request());
  assertEquals(inj.injected.length, 5);
  assertTrue(inj.stdout.length <= 1200, String(inj.stdout.length));
  const { client: c2 } = listing(entries);
  const later = await injectionFor(c2, await config(), request({ injected: inj.injected.map((m) => m.uri) }));
  assertEquals(later.injected.map((m) => m.uri), entries.slice(5).map((e) => e.uri));
  const narrow = await injectionFor(
    listing(entries).client,
    await config({ OPENVIKING_RECALL_DIGEST_LIMIT: "2", OPENVIKING_RECALL_DIGEST_CHARS: "400" }),
    request(),
  );
  assertEquals(narrow.injected.length, 2);
  assertTrue(narrow.stdout.length <= 400, String(narrow.stdout.length));
});

Deno.test("inject: the profile's rows and the memories share one block; an unanswered profile is retried, an empty one is done", async () => {
  await using fake = await FakeOpenViking.start();
  const { createClient, clientOptions } = await import("../openviking/client.ts");
  const c = await config({ OPENVIKING_URL: fake.url });
  const client = createClient(clientOptions(c, ""));
  const first = await injectionFor(client, c, request({ profile: true }));
  assertEquals(first.stdout, `${FAKE_DIGEST_FIRST}\n`);
  assertEquals(first.profile, "injected");
  const compacted = await injectionFor(client, c, request({ profile: true, afterCompaction: true }));
  assertMatch(
    compacted.stdout,
    /^<openviking-context>\nProfile, again after compaction \(viking:\/\/user\/default\/memories\/profile\.md\): /,
  );
  fake.files.delete("viking://user/default/memories/profile.md");
  fake.dirs.set("viking://user/default/memories/preferences", []);
  const empty = await injectionFor(client, c, request({ profile: true, injected: [DEFAULT_ENTRY.uri] }));
  assertEquals([empty.stdout, empty.profile], ["", "empty"]);
  fake.fault({ route: "*", status: 503 });
  const down = await injectionFor(client, c, request({ profile: true }));
  assertEquals([down.stdout, down.profile], ["", "unavailable"]);
});

Deno.test("inject: the full format prints the server's text as it is, or its memories without those already seen", async () => {
  const entries = [entry(1), entry(2)];
  const c = await config({ OPENVIKING_RECALL_FORMAT: "full" });
  const head =
    "<openviking-context>\nRelevant memory from OpenViking. Use the search/read MCP tools to expand URIs.\n";
  const all = await injectionFor(listing(entries).client, c, request());
  assertEquals(all.stdout, `${head}${rendered(entries).replaceAll("<", "&lt;")}\n</openviking-context>\n`);
  const some = await injectionFor(listing(entries).client, c, request({ injected: [entry(1).uri] }));
  assertEquals(
    some.stdout,
    `${head}${rendered([entry(2)]).replaceAll("<", "&lt;")}\n</openviking-context>\n`,
  );
  assertEquals(some.suppressed, [entry(1).uri]);
  const none = await injectionFor(
    listing(entries).client,
    c,
    request({ injected: entries.map((e) => e.uri) }),
  );
  assertEquals(none.stdout, "");
});

Deno.test("inject: a server text with no memories listed loses each line whose URI was shown, not only the whole text", async () => {
  const [a, b] = ["viking://user/d/memories/a.md", "viking://user/d/memories/b.md"];
  const text = `- uses tabs source: ${a}\n- likes Deno source: ${b}`;
  for (const format of ["digest", "full"]) {
    const c = await config({ OPENVIKING_RECALL_FORMAT: format });
    const inj = await injectionFor(
      scriptedClient(() => ok({ digest: text })).client,
      c,
      request({ injected: [a] }),
    );
    assertEquals(inj.stdout.includes("memories/a.md"), false, `${format}: a.md printed a second time`);
    assertMatch(inj.stdout, /likes Deno/);
    assertEquals([inj.injected.map((m) => m.uri), inj.suppressed], [[b], [a]], format);
    assertTrue(inj.shown.includes(b), `${format}: the shown set gains b.md`);
  }
});

Deno.test("inject: lines of a server text without a URI print once a session, and never without a new memory", async () => {
  const [a, b] = ["viking://user/d/memories/a.md", "viking://user/d/memories/b.md"];
  const c = await config();
  const ask = (text: string, injected: string[]) =>
    injectionFor(scriptedClient(() => ok({ digest: text })).client, c, request({ injected }));
  // A heading over the memories: printed with them the first time.
  const first = await ask(`What we know:\n- uses tabs source: ${a}`, []);
  assertEquals(first.stdout, block("- What we know:", `- uses tabs (${a})`));
  // The same heading over a new memory: the memory prints, the heading (already shown) does not.
  const second = await ask(`What we know:\n- uses tabs source: ${a}\n- likes Deno source: ${b}`, first.shown);
  assertEquals(second.stdout, block(`- likes Deno (${b})`));
  // A new line without a URI over memories all shown: nothing (it would stand alone, about what was shown).
  const third = await ask(`New heading:\n- uses tabs source: ${a}`, [...first.shown, ...second.shown]);
  assertEquals([third.stdout, third.suppressed], ["", [a]]);
  // A text that names no URI at all: once, then not again.
  const plain = await ask("The build runs in CI only.", []);
  assertMatch(plain.stdout, /The build runs in CI only\./);
  assertEquals((await ask("The build runs in CI only.", plain.shown)).stdout, "");
  // Nothing that is not a URI is sent to the server as one.
  const { client, calls } = scriptedClient(() => ok({ digest: "x" }));
  await injectionFor(client, c, request({ injected: [...plain.shown, a] }));
  assertEquals((calls[0].body as { exclude_uris: string[] }).exclude_uris, [a]);
});
