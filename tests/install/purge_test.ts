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
import { closedAddress, exists, fakeCompiled, installSandbox } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { SessionQueue } from "../../openviking/queue.ts";
import { sessionDestination } from "../../memory/context.ts";
import { appendLedger } from "../../memory/ledger.ts";

Deno.test("uninstall --purge deletes the config.toml.bak install made, byte-identical to config.toml, in each home", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: closedAddress() });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  await Deno.mkdir(second, { recursive: true });
  const config = '# mine\ndefault_model = "k3"\n';
  for (const home of [t.kimi, second]) await Deno.writeTextFile(`${home}/config.toml`, config);
  for (const kimiHome of [undefined, second]) {
    await t.run(runInstall, { kimiHome }, ctx);
  }
  for (const kimiHome of [second, undefined]) {
    const home = kimiHome ?? t.kimi;
    assertEquals(await Deno.readTextFile(`${home}/config.toml.bak`), config);
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

Deno.test("install --url into one Kimi home names the other homes that now use the new address, in a dry run too", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  const [a, b] = ["http://127.0.0.1:9", "http://127.0.0.1:8"];
  await t.run(runInstall, { credentials: { url: a } }, ctx);
  assertNotMatch(await t.run(runInstall, { kimiHome: second }, ctx), /now use|would use/);
  for (const dryRun of [true, false]) {
    const said = await t.run(runInstall, { dryRun, credentials: { url: b } }, ctx);
    const verb = dryRun ? "would then use" : "now uses";
    assertStringIncludes(said, `the Kimi home ${second} shares ${t.ov}/ovcli.conf: it ${verb} ${b} too`);
  }
  // The same address again moves nothing.
  assertNotMatch(await t.run(runInstall, { credentials: { url: b } }, ctx), /shares/);
});

Deno.test("install --url of another server names the writes queued for the first, and the replay that sends them there", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const [a, b] = ["http://127.0.0.1:9", "http://127.0.0.1:8"];
  await t.run(runInstall, { credentials: { url: a } }, ctx);
  const msg = { role: "user" as const, content: "hello" };
  await (await SessionQueue.open(`${t.ov}/pending`, "kc-s1", { url: a, account: "", user: "" })).messages([
    msg,
  ]);
  for (const dryRun of [true, false]) {
    const said = await t.run(runInstall, { dryRun, credentials: { url: b } }, ctx);
    assertStringIncludes(
      said,
      `1 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${a})`,
    );
    assertMatch(said, new RegExp(`\`OPENVIKING_URL=${a} .+ replay\``));
  }
  // Back to the first: they go there again, nothing to say.
  assertNotMatch(await t.run(runInstall, { credentials: { url: a } }, ctx), /for another server/);
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
    "uninstall --purge commits what waits; our idle watch ends with the hook state, and the copy it held goes",
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
    assertStringIncludes(dry, "commit the 2 captured message(s) of 1 session(s) waiting for a commit now");
    assertEquals(posts, []);
    const said = await t.run(runUninstall, { purge: true }, ctx);
    assertEquals(posts, ["POST /api/v1/sessions/kc-s1/commit"]);
    assertStringIncludes(said, "committed what waited for a commit: kc-s1 (2 message(s))");
    assertEquals((await worker.status).code, 0, "the watch ended by itself once the hook state went");
    assertEquals(await exists(copy), false, said);
    assertEquals(await exists(t.ov), false, said);
  },
});

Deno.test({
  name:
    "uninstall --purge names what it could not commit, and the command that finishes when another process holds the copy",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const down: typeof fetch = () => Promise.reject(new TypeError("connection refused"));
    const { t, ctx, copy } = await purgeSandbox(dir.path, 2, down);
    const other = await holder(copy); // a Kimi session's MCP server, say: not ours to stop
    try {
      const said = await t.run(runUninstall, { purge: true }, ctx);
      assertStringIncludes(said, `Queued: the commit of kc-s1 (2 message(s)), in ${t.ov}/pending/kimicode`);
      assertStringIncludes(said, "the next session start replays it");
      assertStringIncludes(
        said,
        `\nNote: the version ${copy} was not removed: a running process uses it (a Kimi session's MCP server or ` +
          `a hook); once it has ended, run ${copy}/bin/openviking-kimi uninstall --purge.`,
      );
      assertEquals(await exists(copy), true);
      const queued = await Array.fromAsync(Deno.readDir(`${t.ov}/pending/kimicode`));
      assertEquals(queued.length, 1, "the queued commit stays");
    } finally {
      other.kill();
      await other.status;
    }
  },
});

Deno.test("uninstall --purge against a server that never answers queues every waiting commit within its bound; one it refused is kept, and said where", async () => {
  await using dir = await tempDir();
  const refused = "/api/v1/sessions/kc-s0/commit";
  const hangs: typeof fetch = (input, init) =>
    new URL(String(input)).pathname === refused
      ? Promise.resolve(
        Response.json({ status: "error", error: { code: "INVALID_ARGUMENT", message: "no" } }, {
          status: 400,
        }),
      )
      : new Promise((_, reject) =>
        init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))
      );
  const { t, ctx } = await purgeSandbox(dir.path, 2, hangs);
  const state = `${t.ov}/hook-state/kimicode`;
  const first = JSON.parse(await Deno.readTextFile(`${state}/kc-s1.json`));
  for (const s of ["kc-s0", "kc-s2"]) {
    await Deno.writeTextFile(`${state}/${s}.json`, JSON.stringify({ ...first, ovSession: s }));
  }
  await Deno.mkdir(`${t.ov}/pending/kimicode-rejected`, { recursive: true }); // empty when the purge is planned
  t.said();
  const start = Date.now();
  const said = await t.run(runUninstall, { purge: true }, ctx);
  assertTrue(Date.now() - start < 20_000, `the purge took ${Date.now() - start} ms`);
  assertStringIncludes(said, "Queued: the commit of kc-s1 (2 message(s)), kc-s2 (2 message(s))");
  assertNotMatch(said, /no time left/);
  const entries = async (place: string) =>
    (await Array.fromAsync(Deno.readDir(`${t.ov}/pending/${place}`))).length;
  assertEquals(await entries("kimicode"), 2, "both queues stay");
  assertStringIncludes(
    said,
    `Not committed: kc-s0 (2 message(s)): OpenViking refused the commit (kept in ${t.ov}/pending/kimicode-rejected`,
  );
  assertTrue(await entries("kimicode-rejected") > 0, said);
});

Deno.test("uninstall --purge keeps the state of captures it cannot commit (another server's, a send cut off), unless --yes", async () => {
  for (
    const [stuck, why] of [
      [
        { destination: "0".repeat(32) },
        /identity: install again for it \(`\S+ install --url http:\/\/old:1933`\)/,
      ],
      [{ inflight: { keys: ["k3"], at: 1 } }, /committed, a capture of it was cut off mid-send/],
    ] as const
  ) {
    await using dir = await tempDir();
    const posts: string[] = [];
    const fetcher: typeof fetch = (input) => {
      posts.push(new URL(String(input)).pathname);
      return Promise.resolve(Response.json({ status: "ok", result: { task_id: "t1" } }));
    };
    const { t, ctx, watchDir } = await purgeSandbox(dir.path, 2, fetcher);
    const file = `${watchDir}/kc-s1.json`;
    const was = JSON.parse(await Deno.readTextFile(file));
    await Deno.writeTextFile(file, JSON.stringify({ ...was, ...stuck }));
    const origin = { url: "http://old:1933", who: "" };
    const turn = { at: 1, ms: 0, event: "stop", turns: 1, sent: 1, queued: 0, rejected: 0 } as const;
    await appendLedger(`${t.ov}/ledger/kimicode`, "kc-s1", { kind: "capture", ...turn, commit: "", origin });
    posts.length = 0;
    await t.run(runUninstall, { purge: true }, ctx, 1);
    assertMatch(t.all(), why);
    assertStringIncludes(t.all(), "kc-s1 holds 2 captured message(s) OpenViking has not committed");
    assertStringIncludes(t.all(), "uninstall --purge --yes");
    assertTrue(await exists(file), "its state stays");
    await t.run(runUninstall, { purge: true, yes: true }, ctx);
    assertEquals([posts.filter((p) => p.endsWith("/commit")), await exists(file)], [[], false]);
  }
});
