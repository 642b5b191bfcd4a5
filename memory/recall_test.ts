/**
 * Recall's own policy, without processes: the context face's answer, its failure (the context face's whole
 * body: tests/hooks/events_test.ts). Then what the prompt hook
 * prints for a text: memories the session already has are left out whatever the server does with
 * `exclude_uris`; nothing new prints nothing; the same prompt again asks nothing; a held secret is redacted.
 */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { DEFAULT_ENTRY, FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { type Answer, type Call, fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import { Budget, createClient } from "../openviking/client.ts";
import { injectionFor, type InjectionRequest, inStrictScope, recallForPrompt } from "./recall.ts";
import { type Config, loadConfig } from "../openviking/config.ts";

const SETTINGS: Config = {
  ...(await loadConfig({ HOME: "/nonexistent-home" })).config,
  recallPeerScope: "all",
};

const SEARCH = "POST /api/v1/search/search";

const request = (query: string) => ({
  query,
  budget: new Budget(5000),
  stateDir: "",
  sessionId: "kc-s",
  excludeUris: [] as string[],
});

/** A script by route; a route it does not name fails as a missing route. */
function byRoute(routes: Record<string, Answer | ((c: Call) => Answer)>): (c: Call) => Answer {
  return (c) => {
    const a = routes[route(c)];
    return a === undefined ? fail("missing-route", 404) : typeof a === "function" ? a(c) : a;
  };
}

Deno.test("recall: the context face answers; nothing else is asked", async () => {
  const a = { uri: "viking://user/d/memories/a.md", text: "tabs, not spaces" };
  const reply = { entries: [a], rendered: "<memory …>", digest: "a digest we never asked for" };
  const { client, calls } = scriptedClient(byRoute({ [SEARCH]: ok(reply) }));
  const r = await recallForPrompt(client, SETTINGS, request("how do I indent?"));
  assertEquals(r, { source: "context", memories: [a] }, "only the entries are taken");
  assertEquals(calls.map(route), [SEARCH]);
  assertEquals((calls[0].body as { mode: string }).mode, "context");
});

Deno.test("recall: an empty answer from the context face is the answer", async () => {
  const { client, calls } = scriptedClient(byRoute({ [SEARCH]: ok({ entries: [], rendered: "" }) }));
  const r = await recallForPrompt(client, SETTINGS, request("anything relevant?"));
  assertEquals([r.source, r.memories, calls.map(route)], ["context", [], [SEARCH]]);
});

Deno.test("recall: an empty query asks nothing; a failing context face, or a reply not OpenViking's shape, is 'none' and says why", async () => {
  const empty = scriptedClient(() => ok({}));
  assertEquals((await recallForPrompt(empty.client, SETTINGS, request("   "))).source, "none");
  assertEquals(empty.calls.length, 0);
  const down = scriptedClient(() => fail("unreachable", 0, "cannot reach http://ov.test:1933"));
  const r = await recallForPrompt(down.client, SETTINGS, request("anything about the build?"));
  assertEquals([r.source, r.memories, r.failure?.kind, r.failure?.error.message], [
    "none",
    [],
    "unreachable",
    "cannot reach http://ov.test:1933",
  ]);
  for (const answer of [fail("server", 503), ok("not an object")]) {
    const { client, calls } = scriptedClient(byRoute({ [SEARCH]: answer }));
    const got = await recallForPrompt(client, SETTINGS, request("what did I say?"));
    assertEquals([got.source, got.failure !== undefined, calls.map(route)], ["none", true, [SEARCH]]);
  }
});

Deno.test("strict scope: the user's preferences and profile, and this workspace's peer space; nothing else", () => {
  const keep = [
    "viking://user/default/memories/preferences/indent.md",
    "viking://user/u1/memories/profile.md",
    "viking://user/default/peers/github.com-acme-a/memories/events/release.md",
  ];
  const drop = [
    "viking://user/default/memories/events/release-b.md", // filed in the user's space: names no workspace
    "viking://user/default/memories/entities/billing.md",
    "viking://user/default/peers/github.com-acme-b/memories/events/x.md", // another workspace's
    "viking://user/default/peers/github.com-acme-a-fork/memories/events/x.md",
    "viking://resources/docs/a.md",
    "viking://user/default/memories/preferences-of-b.md",
  ];
  for (const uri of keep) assertTrue(inStrictScope(uri, "github.com-acme-a"), uri);
  for (const uri of drop) assertTrue(!inStrictScope(uri, "github.com-acme-a"), uri);
  assertTrue(!inStrictScope(keep[2], ""), "no workspace peer: no peer space");
});

Deno.test("strict scope: recall asks with peer_scope actor and shows only what strict keeps, never the server's text", async () => {
  const mine = "viking://user/default/peers/p-a/memories/events/a.md";
  const pref = "viking://user/default/memories/preferences/tabs.md";
  const theirs = "viking://user/default/memories/events/b.md";
  const entries = [mine, theirs, pref].map((uri) => ({ uri, text: uri, score: 0.9 }));
  const { client, calls } = scriptedClient(
    byRoute({ [SEARCH]: ok({ entries, rendered: `- ${theirs}` }) }),
    { peerId: "p-a" },
  );
  const r = await recallForPrompt(client, { ...SETTINGS, recallPeerScope: "strict" }, request("release"));
  assertEquals([r.source, r.memories.map((m) => m.uri)], ["context", [mine, pref]]);
  assertEquals((calls[0].body as Record<string, unknown>).peer_scope, "actor");
  const all = await recallForPrompt(
    scriptedClient(byRoute({ [SEARCH]: ok({ entries }) })).client,
    SETTINGS,
    request("x"),
  );
  assertEquals(all.memories.length, 3, "the other scopes keep what the server sends");
});

const entry = (n: number, text = `memory ${n}`) => ({
  uri: `viking://user/default/memories/events/e${n}.md`,
  category: "events",
  score: 0.9 - n / 100,
  detail: "abstract",
  text,
});

const config = async (env: Record<string, string> = {}) =>
  (await loadConfig({ HOME: "/nonexistent-home", ...env })).config;
const block = (...lines: string[]) => `<openviking-context>\n${lines.join("\n")}\n</openviking-context>\n`;

const injection = (over: Partial<InjectionRequest> = {}): InjectionRequest => ({
  query: "what did we decide about the cache?",
  sessionId: "kc-s",
  injected: [],
  budget: new Budget(5000),
  stateDir: "",
  ...over,
});

/** A server whose context face lists `entries` whatever it is asked to exclude. */
const listing = (entries: ReturnType<typeof entry>[]) =>
  scriptedClient((c) => route(c) === SEARCH ? ok({ entries }) : fail("missing-route", 404));

Deno.test("inject: memories the session already has are left out, even when the server sends them again", async () => {
  const { client, calls } = listing([entry(1), entry(2), entry(3)]);
  const inj = await injectionFor(
    client,
    await config(),
    injection({ injected: [entry(1).uri, entry(3).uri] }),
  );
  assertEquals(inj.stdout, block(`- memory 2 (${entry(2).uri})`));
  assertEquals(inj.suppressed, [entry(1).uri, entry(3).uri]);
  assertEquals(inj.injected, [{
    uri: entry(2).uri,
    score: entry(2).score,
    chars: `- memory 2 (${entry(2).uri})`.length,
  }]);
  assertEquals(inj.recall, "context");
  assertEquals((calls[0].body as { exclude_uris: string[] }).exclude_uris, [entry(1).uri, entry(3).uri]);
  // Only URIs go out as exclude_uris (the server refuses anything else; an older version kept `text:` keys).
  const old = listing([entry(1)]);
  await injectionFor(old.client, await config(), injection({ injected: ["text:0123abcd", entry(3).uri] }));
  assertEquals((old.calls[0].body as { exclude_uris: string[] }).exclude_uris, [entry(3).uri]);
});

Deno.test("inject: nothing new is nothing printed; a too short prompt asks nothing", async () => {
  const { client } = listing([entry(1)]);
  const inj = await injectionFor(client, await config(), injection({ injected: [entry(1).uri] }));
  assertEquals([inj.stdout, inj.injected, inj.suppressed], ["", [], [entry(1).uri]]);
  const quiet = listing([entry(1)]);
  const short = await injectionFor(quiet.client, await config(), injection({ query: "ok" }));
  assertEquals([short.stdout, short.recall, quiet.calls.length], ["", "skipped", 0]);
});

Deno.test("inject: the same prompt again uses its kept recall without asking, and still prints no second copy", async () => {
  const { client, calls } = listing([]);
  const kept = { source: "context" as const, memories: [{ uri: entry(1).uri, text: "memory 1" }] };
  const again = await injectionFor(
    client,
    await config(),
    injection({ reuse: kept, injected: [entry(1).uri] }),
  );
  assertEquals([again.stdout, again.recall, again.found, calls.length], ["", "reused", undefined, 0]);
  // After a compaction the session's set was cleared: the kept memory comes back, still without a request.
  const after = await injectionFor(client, await config(), injection({ reuse: kept }));
  assertEquals(after.stdout, block(`- memory 1 (${entry(1).uri})`));
  assertEquals(calls.length, 0);
});

Deno.test("inject: at most the limit of memories and the characters allowed; the rest comes on a later prompt", async () => {
  const long = "a long memory text about the tile cache and how its key ignores the style version ".repeat(3);
  const entries = Array.from({ length: 9 }, (_, i) => entry(i, long));
  const { client } = listing(entries);
  const inj = await injectionFor(client, await config(), injection());
  assertEquals(inj.injected.length, 5);
  assertTrue(inj.stdout.length <= 1200, String(inj.stdout.length));
  const { client: c2 } = listing(entries);
  const later = await injectionFor(
    c2,
    await config(),
    injection({ injected: inj.injected.map((m) => m.uri) }),
  );
  assertEquals(later.injected.map((m) => m.uri), entries.slice(5).map((e) => e.uri));
});

Deno.test("inject: a credential the server holds is printed redacted, its text and URI alike", async () => {
  await using fake = await FakeOpenViking.start();
  const c = await config({ OPENVIKING_URL: fake.url });
  const key = ["ghp_", "Q7rLm2XkTzV9pWc4NbHs8YdJf3GaE1uK6oRi"].join("");
  const uri = `viking://user/default/memories/entities/deploy-${key}.md`;
  fake.context = { entries: [{ ...DEFAULT_ENTRY, uri, text: `The key is ${key}.` }] };
  const secret = await injectionFor(createClient(c, ""), c, injection());
  assertEquals(secret.stdout.split("[REDACTED]").length, 3, secret.stdout); // its URI too, not its state's
  assertEquals(secret.injected.map((m) => m.uri), [uri]);
});
