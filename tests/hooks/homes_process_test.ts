/**
 * With HOME unset nothing may resolve against the hook's cwd, a repository whose `.openviking/` names a server
 * and keys of its own: nothing reaches it, no key is sent, nothing appears under the cwd, recall works from the
 * environment, capture does not happen ("no-home"). A process per run: the process cwd is what is at stake.
 * With a home, openviking/config_test.ts ("loadConfig with a home: workspace files set knobs only") proves a
 * workspace file never sets the URL or a key. doctor without HOME fails its `home` check and writes nothing.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FAKE_DIGEST, FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { SESSION, snapshot, stdinOf } from "./world.ts";

const FIXTURE = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);
const REPO_KEY = "sk-repo-chosen-key-0123456789";
const REPO_ROOT_KEY = "sk-repo-root-key-0123456789";

/** A repository whose `.openviking/` names `url` and keys of its own in every file we might read. */
async function hostileRepo(root: string, url: string): Promise<string> {
  const repo = `${root}/repo`;
  await Deno.mkdir(`${repo}/.openviking`, { recursive: true });
  const write = (name: string, value: unknown) =>
    Deno.writeTextFile(`${repo}/.openviking/${name}`, JSON.stringify(value));
  await write("ovcli.conf", { url, api_key: REPO_KEY, account: "repo-acct", user: "repo-user" });
  await write("ov.conf", { server: { url, root_api_key: REPO_ROOT_KEY }, kimicode: { apiKey: REPO_KEY } });
  // Knobs a workspace may set; without a home even these are not read (recall stays on).
  await write("config.json", { url, api_key: REPO_KEY, baseUrl: url, autoRecall: false });
  await write("config.local.json", { url, apiKey: REPO_KEY, mcpUrl: `${url}/mcp`, autoRecall: false });
  await Deno.writeTextFile(`${repo}/README.md`, "a repository\n");
  return repo;
}

const EVENTS: [string, Record<string, unknown>][] = [
  ["session-start", { source: "startup" }],
  ["user-prompt-submit", { prompt: "how should I indent this file?" }],
  ["stop", { stop_hook_active: false }],
  ["stop-failure", { error_type: "APIStatusError" }],
  ["pre-compact", { trigger: "manual" }],
  ["interrupt", { turn_id: 2 }],
  ["session-end", { reason: "exit" }],
];

for (const withEnvUrl of [true, false]) {
  Deno.test(`no HOME${withEnvUrl ? ", OPENVIKING_URL set" : ", nothing set"}: the repository's .openviking/ chooses nothing, nothing is written, capture is off${withEnvUrl ? "" : "; doctor fails its home check"}`, async () => {
    await using dir = await tempDir();
    await using userServer = await FakeOpenViking.start();
    await using repoServer = await FakeOpenViking.start();
    const repo = await hostileRepo(dir.path, repoServer.url);
    const kimi = `${dir.path}/kimi-home`;
    await placeJournal(dir.path, SESSION, await Deno.readTextFile(FIXTURE));
    await Deno.rename(`${dir.path}/.kimi-code`, kimi);
    const row = {
      sessionId: SESSION,
      sessionDir: `${kimi}/sessions/wd_proj_000000000000/${SESSION}`,
      workDir: repo,
    };
    await Deno.writeTextFile(`${kimi}/session_index.jsonl`, `${JSON.stringify(row)}\n`);
    const log = `${dir.path}/log/hooks.jsonl`;
    const env: Record<string, string> = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      KIMI_CODE_HOME: kimi,
      OPENVIKING_DEBUG: "1",
      OPENVIKING_DEBUG_LOG: log,
      OPENVIKING_WRITE_PATH_ASYNC: "0",
      OPENVIKING_CAPTURE_WAIT_MS: "0",
      OPENVIKING_TIMEOUT_MS: "1000",
      OPENVIKING_PROMPT_BUDGET_MS: "2500",
      ...(withEnvUrl ? { OPENVIKING_URL: userServer.url } : {}),
    };
    const before = snapshot(repo);
    const everything = () => snapshot(dir.path).filter((p) => !p.startsWith("/log"));
    const beforeAll = everything();
    for (const [event, extra] of EVENTS) {
      const stdin = stdinOf(event, SESSION, { cwd: repo, ...extra });
      const r = await runCli(["hook", event], { env, clearEnv: true, cwd: repo, stdin });
      assertEquals([r.code, r.stderr], [0, ""], `${event} exits 0 silently`);
      if (event === "user-prompt-submit" && withEnvUrl) {
        assertEquals(r.stdout, `${FAKE_DIGEST}\n`, "recall works from the environment, without state");
      } else assertEquals(r.stdout, "", `${event} prints nothing`);
    }
    assertEquals(repoServer.requests.map((q) => q.route), [], "nothing reaches the repository-chosen server");
    for (const q of userServer.requests) {
      const seen = JSON.stringify(q.headers);
      assertTrue(!seen.includes(REPO_KEY) && !seen.includes(REPO_ROOT_KEY), `repository key sent: ${seen}`);
    }
    if (withEnvUrl) {
      assertEquals(userServer.requestsTo("POST /api/v1/search/search").length, 1, "one recall");
      const sessions = userServer.requests.filter((q) => q.path.startsWith("/api/v1/sessions"));
      assertEquals(sessions.map((q) => q.route), [], "no capture without a home");
    }
    assertEquals(snapshot(repo), before, "nothing appeared or changed under the cwd");
    assertEquals(everything(), beforeAll, "nothing written anywhere but the log the environment named");
    const entries = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l));
    const outcomes = entries.filter((l) => l.stage === "done").map((l) => [l.event, l.outcome]);
    const prompt = withEnvUrl ? "injected" : "nothing";
    assertEquals(outcomes, EVENTS.map(([e]) => [e, e === "user-prompt-submit" ? prompt : "no-home"]));
    const why = entries.find((l) => l.stage === "no-home");
    assertMatch(String(why?.reason), /HOME is not set/);
    if (withEnvUrl) return;
    // doctor in the same place: a failing check says HOME is unset and what to do; it asks and writes nothing.
    const r = await runCli(["doctor", "--json"], { env, clearEnv: true, cwd: repo });
    assertEquals(r.code, 1, r.stderr);
    const home =
      (JSON.parse(r.stdout).checks as { id: string; status: string; summary: string; fix?: string }[])
        .find((c) => c.id === "home");
    assertEquals(home?.status, "fail");
    assertMatch(home!.summary, /HOME is not set/);
    assertMatch(home!.fix ?? "", /HOME/);
    assertEquals([repoServer.requests.length, userServer.requests.length], [0, 0]);
    assertEquals([snapshot(repo), everything()], [before, beforeAll], "doctor wrote nothing");
  });
}
