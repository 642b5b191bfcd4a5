/**
 * A server with API keys (issue #19, point 2) and a key that goes only where it was given (issue #20, point 3):
 * install in-process (the key taken from stdin: key_test.ts), the hooks, `status` and `doctor` as processes,
 * against a fake OpenViking that answers a root key as the real 0.5.2 server does
 * (tests/e2e/readme_api_key_test.ts pins the fake to the real one).
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { runCli, runProcess, type RunResult } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { closedAddress, fakeCompiled, isolatedEnv, opts, tree } from "./helpers.ts";
import { runInstall } from "../../install/install.ts";
import type { CredentialArgs } from "../../install/ovcli.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";

const ROOT_KEY = "root-4c7f0d1e9a2b";
const SESSION = "session_5ec0e7a1-0000-4000-8000-0000000000a1";

/** A sandboxed HOME with a Kimi home, and a runner of the CLI in it. */
async function sandbox(root: string, extra: Record<string, string> = {}) {
  const home = `${root}/home`;
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  const env = isolatedEnv(home, { OPENVIKING_TIMEOUT_MS: "3000", ...extra });
  const outputs: string[] = [];
  const cli = async (
    args: string[],
    stdin?: string,
    more: Record<string, string> = {},
  ): Promise<RunResult> => {
    const r = await runCli(args, { env: { ...env, ...more }, clearEnv: true, cwd: root, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const self = await fakeCompiled(root);
  /** install in-process, the key as `--api-key-stdin` gives it. */
  const install = async (credentials: CredentialArgs, dryRun = false): Promise<RunResult> => {
    const said: [string[], string[]] = [[], []];
    const out = { info: (l: string) => said[0].push(l), error: (l: string) => said[1].push(l) };
    const ctx = { env, self, os: "posix" as const, out, now: new Date(), cwd: root };
    const code = await runInstall(
      ctx,
      opts({ credentials: { apiKeyFrom: "stdin", ...credentials }, dryRun }),
    );
    const [stdout, stderr] = said.map((l) => l.join("\n"));
    outputs.push(stdout, stderr);
    return { code, stdout, stderr };
  };
  const ovcli = async () =>
    JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`).catch(() => "{}")) as Record<
      string,
      unknown
    >;
  const prompt = (text: string, more: Record<string, string> = {}) =>
    cli(
      ["hook", "user-prompt-submit"],
      JSON.stringify({ session_id: SESSION, cwd: root, prompt: text }),
      more,
    );
  return { home, env, cli, install, ovcli, prompt, outputs };
}

/** Every file under `dir` whose text holds `secret`. */
async function filesHolding(dir: string, secret: string): Promise<string[]> {
  const found: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) found.push(...await filesHolding(path, secret));
    else if (e.isFile && (await Deno.readTextFile(path).catch(() => "")).includes(secret)) found.push(path);
  }
  return found;
}

Deno.test("install refuses the root key with the two commands that make a user key; they work as printed", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ rootKey: ROOT_KEY });
  const t = await sandbox(dir.path);
  for (const dryRun of [true, false]) {
    const refused = await t.install({ url: fake.url, apiKey: ROOT_KEY }, dryRun);
    assertEquals(refused.code, 2, refused.stdout + refused.stderr);
    assertMatch(
      refused.stderr,
      /the key given is OpenViking's root key .*: it is not saved and nothing was changed/,
    );
    assertEquals(await tree(t.home), ["/.kimi-code/"], "nothing written");
  }
  const { stderr } = await t.install({ url: fake.url, apiKey: ROOT_KEY });
  const curls = stderr.split("\n").filter((l) => l.startsWith("  curl ")).map((l) => l.trim());
  assertEquals(curls.length, 2, stderr);
  const replies = [];
  for (const line of curls) {
    const r = await runProcess("sh", ["-c", line], { env: { ...t.env, ROOT_KEY }, clearEnv: true });
    replies.push(r.stdout);
  }
  const made = fake.accounts.get("default")?.get("default");
  assertTrue(replies.some((r) => r.includes(`"user_key":"${made?.key}"`)), replies.join("\n"));
  assertMatch(
    stderr,
    /then give the "user_key" of the reply to install: `.* install --url \S+ --api-key-stdin`\./,
  );
  const saved = await t.install({ url: fake.url, apiKey: made!.key });
  assertEquals(saved.code, 0, saved.stdout + saved.stderr);
  assertEquals((await t.ovcli()).api_key, made?.key, "the user key is saved");
  assertStringIncludes(saved.stdout, "memory's routes answer (API key from ovcli.conf)");

  const sentBefore = fake.requests.length;
  await t.prompt("how do I indent this project?");
  const after = fake.requests.slice(sentBefore);
  assertTrue(after.some((r) => r.route === "POST /api/v1/search/search"), "recall ran");
  for (const r of after) assertEquals(r.headers.authorization, `Bearer ${made?.key}`, r.route);
  assertEquals(await filesHolding(t.home, ROOT_KEY), [], "no file holds the root key");
  for (const o of t.outputs) assertTrue(!o.includes(ROOT_KEY), `an output holds the root key: ${o}`);
});

Deno.test("a key install cannot save stops it: nothing written, the key nowhere, and what to do said", async () => {
  const cases: {
    name: string;
    server?: boolean;
    key: string;
    says: (url: string) => string[];
  }[] = [
    {
      name: "a key while the server does not answer",
      key: ROOT_KEY,
      says: (url) => [
        `the server at ${url} does not answer, so the key given cannot be checked: it is not saved`,
        "Start the server and run install again",
        "or install without a key now",
      ],
    },
    {
      name: "a key the server refuses: where a key comes from",
      server: true,
      key: "sk-wrong",
      says: () => [
        "refused this key (HTTP 401: Invalid API key); it is not saved and nothing was changed",
        "Give a user key: the server's admin makes one, or you with its root key",
      ],
    },
  ];
  for (const c of cases) {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start({ apiKey: "sk-right" });
    const t = await sandbox(dir.path);
    const url = c.server ? fake.url : closedAddress();
    const r = await t.install({ url, apiKey: c.key });
    assertEquals(r.code, 1, `${c.name}: ${r.stdout}`);
    for (const said of c.says(url)) assertStringIncludes(r.stderr, said, c.name);
    assertEquals(await filesHolding(t.home, c.key), [], `${c.name}: the key is nowhere`);
    assertEquals(await tree(t.home), ["/.kimi-code/"], `${c.name}: nothing written`);
    for (const o of t.outputs) assertTrue(!o.includes(c.key), c.name);
  }
});

Deno.test("the way on install gives when the server does not answer works as printed, past a key saved for another address", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-for-a" });
  const t = await sandbox(dir.path);
  assertEquals((await t.install({ url: fake.url, apiKey: "sk-for-a" })).code, 0);
  const old = await Deno.readTextFile(`${t.home}/.openviking/ovcli.conf`);
  const url = closedAddress();
  const r = await t.install({ url, apiKey: "sk-for-b" });
  assertEquals(r.code, 1, r.stdout + r.stderr);
  const way =
    /or install without a key now \(`([^`]+)`; it deletes the key saved for (\S+), keeping the old file as ovcli\.conf\.bak\)/
      .exec(r.stderr);
  assertTrue(way !== null, r.stderr);
  assertEquals(way[2], fake.url);
  const ran = await runProcess("sh", ["-c", way[1]], {
    env: t.env,
    clearEnv: true,
    cwd: dir.path,
    timeoutMs: 120_000,
  });
  assertEquals(ran.code, 0, `${way[1]}\n${ran.stdout}${ran.stderr}`);
  assertStringIncludes(ran.stdout, `api_key deleted (the key saved for ${fake.url})`);
  assertEquals(await t.ovcli(), { url }, "installed without a key, as it said");
  assertEquals(
    await Deno.readTextFile(`${t.home}/.openviking/ovcli.conf.bak`),
    old,
    "the deleted key is kept",
  );
});

Deno.test("install without a key for a server that wants one: the server's sentence ends once", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-right" });
  const t = await sandbox(dir.path);
  const r = await t.install({ url: fake.url });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /^Note: .*Missing API Key when resolving identity\.$/m);
  assertNotMatch(r.stdout, /\.\.$/m);
});

// That the hooks never send ov.conf's root key is openviking/config_test.ts's "ov.conf's root_api_key is never a
// client's key" (every hook takes its key from loadConfig).
Deno.test("status and doctor say a saved root key is one", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ rootKey: ROOT_KEY });
  const t = await sandbox(dir.path);
  await Deno.mkdir(`${t.home}/.openviking`, { recursive: true });
  // An install before this one saved the root key in ovcli.conf: status and doctor tell what it is.
  await Deno.writeTextFile(
    `${t.home}/.openviking/ovcli.conf`,
    JSON.stringify({ url: fake.url, api_key: ROOT_KEY }),
  );
  const status = JSON.parse((await t.cli(["status", "--json"])).stdout);
  assertEquals([status.connection.reachable, status.connection.authenticated], [true, false]);
  assertMatch(status.connection.problem.message, /it is OpenViking's root key/);
  assertMatch(status.connection.problem.fix, /(openviking-kimi| cli) install --api-key-stdin/);
  const text = (await t.cli(["status"])).stdout;
  assertMatch(text, /reachable \(OpenViking 0\.5\.2-fake\)\n\s+key REFUSED/);
  const doctor = JSON.parse((await t.cli(["doctor", "--json"])).stdout) as {
    checks: Record<string, string>[];
  };
  const auth = doctor.checks.find((c) => c.id === "auth")!;
  assertEquals(auth.status, "fail");
  assertMatch(auth.summary, /root key/);
  assertMatch(auth.fix, /make a user key with it/);
  for (const o of t.outputs) assertTrue(!o.includes(ROOT_KEY));
});

Deno.test("status with a wrong key: the server is reachable and the key refused (not 'NOT reachable')", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-right" });
  const t = await sandbox(dir.path, {
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    OPENVIKING_COMMIT_POLICY: "every-turn",
  });
  const conf = `${t.home}/.openviking/ovcli.conf`;
  await Deno.mkdir(`${t.home}/.openviking`, { recursive: true });
  await Deno.writeTextFile(conf, JSON.stringify({ url: fake.url, api_key: "sk-right" }));
  await placeJournal(t.home, SESSION, new JournalBuilder().simpleTurn("a question", "an answer").toString());
  await t.cli(
    ["hook", "stop"],
    JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: dir.path }),
  );
  assertTrue(fake.requestsTo("POST /api/v1/sessions/:id/commit").length > 0, "a commit to ask about");
  await Deno.writeTextFile(conf, JSON.stringify({ url: fake.url, api_key: "sk-bad" }));
  const status = JSON.parse((await t.cli(["status", "--json"])).stdout);
  assertEquals([status.connection.reachable, status.connection.authenticated], [true, false]);
  assertMatch(status.connection.problem.message, /refused the key \(HTTP 401\): Invalid API key/);
  assertMatch(status.connection.problem.fix, /the server's admin makes one/);
  assertNotMatch(JSON.stringify(status.notAsked), /whether the key is accepted/);
  const text = (await t.cli(["status"])).stdout;
  assertMatch(text, /reachable \(OpenViking 0\.5\.2-fake\)\n\s+key REFUSED/);
  assertMatch(text, /Not asked \(key refused\): the commit tasks of\s/);
});

Deno.test("install --url NEW: the saved key never goes to the new address, is not deleted unasked, and /health never gets a key", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-for-a" });
  const seen: string[] = [];
  await using page = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seen.push(
      `${req.method} ${new URL(req.url).pathname} auth=${req.headers.get("authorization") ?? "none"}`,
    );
    return new Response("<html>not OpenViking</html>", { headers: { "content-type": "text/html" } });
  });
  const other = `http://127.0.0.1:${page.addr.port}`;
  const t = await sandbox(dir.path);
  assertEquals((await t.install({ url: fake.url, apiKey: "sk-for-a" })).code, 0);
  const kept = await t.install({ url: fake.url });
  assertStringIncludes(kept.stdout, `API key: the one saved for ${fake.url} is kept`);
  assertEquals((await t.ovcli()).api_key, "sk-for-a");

  // A new address (a typo, say) does not cost the saved key unasked: refused, nothing changed.
  const typo = await t.install({ url: other });
  assertTrue(typo.code !== 0, typo.stdout);
  assertStringIncludes(
    typo.stderr,
    `holds the API key saved for ${fake.url}, and a key is never sent to another`,
  );
  assertStringIncludes(typo.stderr, `--api-key "" to delete the saved one; nothing was changed`);
  assertEquals((await t.ovcli()).api_key, "sk-for-a");
  const moved = await t.install({ url: other, apiKey: "" });
  assertEquals(moved.code, 0, moved.stderr);
  assertEquals(await t.ovcli(), { url: other });
  await t.prompt("which indent does this project use?");
  assertTrue(seen.length > 0, "the new address was asked");
  assertEquals(seen.filter((s) => !s.endsWith("auth=none")), [], "the new address never got a key");
  const health = fake.requestsTo("GET /health");
  assertTrue(health.length > 0);
  assertEquals(health.filter((r) => r.headers.authorization), [], "/health is asked without a key");
});
