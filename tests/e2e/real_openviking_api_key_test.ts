/**
 * Against the REAL OpenViking server (PyPI `openviking`, tests/support/real-openviking.ts) in api_key mode:
 * README's "Server with API keys" word for word (the root key refused, a user key made by its curls), user
 * keys, 401/403 shapes, identity from the key, the fake's answers to that flow, `memories` with provenance.
 * Its own file, so it runs beside the dev-mode one (tests/e2e/kimi_real_openviking_test.ts): each file starts
 * a server.
 */

import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { ROOT, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import {
  OPENVIKING_VERSION,
  type RealOpenViking,
  rssKiB,
  startRealOrSkip,
} from "../support/real-openviking.ts";
import { isolatedEnv } from "../install/helpers.ts";
import { filesContaining } from "./harness.ts";
import {
  call,
  commitAndWait,
  expectEdges,
  type Json,
  log,
  NO_PEER,
  obj,
  REAL,
  UNHURRIED,
} from "./real-calls.ts";

const PROJECT_PEER = "-work-proj";

/** One call of the server's API as the test's user (no actor peer), its `result`. */
async function api(server: RealOpenViking, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await call(server, method, path, body, NO_PEER);
  assertEquals(r.status, 200, r.text);
  return r.json.result;
}

const API_KEY_SESSION = "session_5ec0e7a1-0000-4000-8000-0000000000e2";
const readme = await Deno.readTextFile(`${ROOT}/README.md`);

/** The shell lines of the section's code block. */
function sectionCommands(): string[] {
  const start = readme.indexOf("### Server with API keys");
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assertTrue(block !== undefined, "README's section has a sh block");
  return block!.replaceAll("\\\n", "").split("\n").filter((l) => l.trim() && !l.startsWith("#"));
}

/** What a reply says, as far as a client looks: status, error code and words, the result's field names. */
async function shape(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json() as Record<string, unknown>;
  const error = json.error as Record<string, unknown> | null | undefined;
  const result = json.result;
  const fields = (v: unknown) => v && typeof v === "object" ? Object.keys(v).sort() : typeof v;
  return {
    status: res.status,
    code: error?.code,
    message: error?.message,
    result: Array.isArray(result) ? result.map(fields) : fields(result),
  };
}

Deno.test({
  name: 'real OpenViking (api_key mode): README "Server with API keys" word for word; user keys, 401/403 ' +
    "shapes, identity from the key",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await startRealOrSkip("real OpenViking probe (api_key)", "api_key");
  if (!server) return;
  const rss = await rssKiB(server.pid);
  log(
    `${server.mode} server ${server.url} openviking==${OPENVIKING_VERSION} ${server.startupMs} ms, RSS ${rss} KiB`,
  );
  await using dir = await tempDir();
  const root = server.rootApiKey!;
  const home = `${dir.path}/home`;
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  // every-turn: the Stop below leaves no idle watch running after the test.
  const env = isolatedEnv(home, { OPENVIKING_TIMEOUT_MS: "30000", OPENVIKING_COMMIT_POLICY: "every-turn" });
  const outputs: string[] = [];
  const cli = async (args: string[], stdin?: string) => {
    const r = await runCli(args, { env, clearEnv: true, cwd: dir.path, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  try {
    await t.step("memories: list, show with provenance, forget, export and import", async () => {
      await using dir = await tempDir();
      const started = performance.now();
      const key = { OPENVIKING_API_KEY: server.apiKey ?? "", OPENVIKING_PEER_ID: PROJECT_PEER };
      const env = sandboxEnv(dir.path, server.url, { ...UNHURRIED, ...key });
      const cli = (...args: string[]) => runCli(["memories", ...args], { env, clearEnv: true });
      const project = `viking://~/peers/${PROJECT_PEER}/memories/events/release.md`;
      await api(server, "POST", "/api/v1/content/write", {
        uri: project,
        content: "Released 2.0 on Friday.",
        mode: "create",
      });
      const fact = "Remember: I prefer tabs over spaces in Go code.";
      const task = await commitAndWait(server, "kc-session_r", fact, "t4");
      assertEquals(task.status, "completed", JSON.stringify(task));
      const ledger = `${dir.path}/.openviking/ledger/kimicode`;
      await Deno.mkdir(ledger, { recursive: true });
      const line = { kind: "capture", at: Date.now(), ms: 1, rejected: 0, event: "Stop", turns: 1, sent: 2 };
      Object.assign(line, { queued: 0, commit: "committed", taskId: task.task_id });
      await Deno.writeTextFile(`${ledger}/session_r.jsonl`, `${JSON.stringify(line)}\n`);

      const listed = await cli("--json");
      assertEquals(listed.code, 0, listed.stderr);
      const memories: { uri: string; scope: string; kind: string }[] = JSON.parse(listed.stdout).memories;
      const tabs = memories.find((m) => m.kind === "preferences" && m.scope === "user");
      assertTrue(tabs !== undefined, `the extracted preference is listed: ${listed.stdout}`);
      const release = memories.find((m) => m.scope === "project");
      const peers = `viking://user/${server.user}/peers`;
      assertEquals(release?.uri, `${peers}/${PROJECT_PEER}/memories/events/release.md`);
      const text = await cli();
      assertMatch(text.stdout, /memories: this project's and yours/);
      assertStringIncludes(text.stdout, "project: Released 2.0 on Friday.");

      const shown = await cli("show", tabs.uri);
      assertEquals(shown.code, 0, shown.stderr);
      assertStringIncludes(shown.stdout, "I prefer tabs over spaces in Go code.");
      assertStringIncludes(shown.stdout, "- added by commit archive_001 of Kimi session session_r");
      assertStringIncludes(shown.stdout, "turn id t4 (as `turns` lists it)");
      assertStringIncludes(shown.stdout, `task ${task.task_id}: our Stop capture`);

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
    });

    await t.step(
      "the section's commands: install refuses the root key, the curls make the user key it saves",
      async () => {
        for (const dryRun of [["--dry-run"], []]) {
          const refused = await cli(
            ["install", ...dryRun, "--url", server.url, "--api-key-stdin"],
            `${root}\n`,
          );
          assertEquals(refused.code, 2, refused.stdout + refused.stderr);
          assertMatch(
            refused.stderr,
            /the key given is OpenViking's root key .*: it is not saved and nothing was changed/,
          );
        }
        const commands = sectionCommands();
        assertEquals(commands.length, 3, commands.join("\n"));
        let userKey = "";
        for (const line of commands) {
          const sh = ["-c", line.replaceAll("http://127.0.0.1:1933", server.url)];
          const shell = { ...env, ROOT_KEY: root };
          const r = await runProcess("sh", sh, {
            cwd: ROOT,
            env: shell,
            clearEnv: true,
            stdin: `${userKey}\n`,
          });
          outputs.push(r.stdout, r.stderr);
          assertEquals(r.code, 0, r.stdout + r.stderr);
          userKey = /"user_key":"([^"]+)"/.exec(r.stdout)?.[1] ?? userKey;
        }
        const saved = JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`));
        assertEquals([saved.url, saved.api_key], [server.url, userKey]);
      },
    );

    await t.step("memory works with the saved key: recall, capture, status, doctor", async () => {
      await placeJournal(
        home,
        API_KEY_SESSION,
        new JournalBuilder().simpleTurn("I indent with tabs.", "Noted.").toString(),
      );
      const payload = (e: Record<string, unknown>) =>
        JSON.stringify({ session_id: API_KEY_SESSION, cwd: dir.path, ...e });
      await cli(["hook", "user-prompt-submit"], payload({ prompt: "how do I indent?" }));
      env.OPENVIKING_WRITE_PATH_ASYNC = "0";
      env.OPENVIKING_CAPTURE_WAIT_MS = "0";
      await cli(["hook", "stop"], payload({}));
      await cli(["hook", "session-end"], payload({}));
      const status = JSON.parse((await cli(["status", "--json", "--session", API_KEY_SESSION])).stdout);
      assertEquals([status.connection.reachable, status.connection.authenticated], [true, true]);
      assertEquals(status.connection.user, "default");
      const s = status.sessions[0];
      assertEquals(s.lastError, undefined, JSON.stringify(s.lastError));
      assertTrue(s.captures.sent > 0 && s.captures.queued === 0, JSON.stringify(s.captures));
      assertEquals(s.commits.at(-1)?.outcome, "committed");
      const doctor = JSON.parse((await cli(["doctor", "--json"])).stdout) as {
        checks: Record<string, string>[];
      };
      assertEquals(doctor.checks.find((c) => c.id === "auth")?.status, "ok");
    });

    await t.step(
      "the root key again: refused, the user key stays, the root key in no file and no output",
      async () => {
        const before = await Deno.readTextFile(`${home}/.openviking/ovcli.conf`);
        const again = await cli(["install", "--url", server.url, "--api-key-stdin"], `${root}\n`);
        assertEquals(again.code, 2, again.stderr);
        assertEquals(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`), before);
        assertEquals(await filesContaining(home, root), []);
        for (const o of outputs) {
          assertTrue(!o.includes(root), `an output holds the root key: ${o.slice(0, 300)}`);
        }
      },
    );

    await t.step("the fake answers this flow as the real server does", async () => {
      await using fake = await FakeOpenViking.start({ rootKey: root });
      // deno-fmt-ignore: a table, a row a line
      const flow: [string, string, unknown?][] = [
        ["POST", "/api/v1/search/find", { query: "x", limit: 1 }],
        ["GET", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F&simple=true&node_limit=1"],
        ["GET", "/api/v1/system/status"],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/nope/users", { user_id: "bob", role: "user" }],
      ];
      for (const [method, path, body] of flow) {
        const real = await shape(server.url, method, path, root, body);
        assertEquals(await shape(fake.url, method, path, root, body), real, `${method} ${path}`);
      }
      for (const path of ["/api/v1/system/status", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F"]) {
        const real = await shape(server.url, "GET", path, "wrong-key");
        assertEquals(await shape(fake.url, "GET", path, "wrong-key"), real, `a wrong key on ${path}`);
      }
      // A lone surrogate: the message is refused (capture sends U+FFFD instead, kimi/journal/clean.ts).
      await using user = await FakeOpenViking.start({ apiKey: server.apiKey });
      const message = { role: "user", content: "a \u{1F600} \ud800 b", turn_id: "0" };
      for (
        const [path, body] of [["messages", message], ["messages/batch", { messages: [message] }]] as const
      ) {
        const at = `/api/v1/sessions/kc-session_parity/${path}`;
        const real = await shape(server.url, "POST", at, server.apiKey!, body);
        assertEquals(real.status, 400, JSON.stringify(real));
        assertEquals(
          await shape(user.url, "POST", at, server.apiKey!, body),
          real,
          `a lone surrogate, ${path}`,
        );
      }
    });
    await t.step("/health: open without a key, identity with a user key", async () => {
      const anon = await fetch(`${server.url}/health`);
      const anonJson = await anon.json() as Json;
      assertEquals([anon.status, anonJson.auth_mode, "user_id" in anonJson], [200, "api_key", false]);
      const mine = await call(server, "GET", "/health");
      const who = [mine.status, mine.json.account_id, mine.json.user_id, mine.json.role];
      assertEquals(who, [200, server.account, server.user, "user"], mine.text);
    });

    await t.step("401/403 shapes: wrong key, missing key, MCP, root key; X-API-Key works too", async () => {
      const wrong = { Authorization: "Bearer wrong-key" };
      const sse = { ...wrong, Accept: "application/json, text/event-stream" };
      const invalid = "401 code=UNAUTHENTICATED verdict=auth message=Invalid API key";
      // deno-fmt-ignore: a table, a row a line
      await expectEdges(server, [
        ["/health, a wrong key", "GET", "/health", undefined, "401", { Authorization: "Bearer nope" }],
        ["a wrong key", "GET", "/api/v1/system/status", undefined, invalid, wrong],
        ["no key", "POST", "/api/v1/search/find", { query: "x" }, "401 message=Missing API Key when resolving identity.", { Authorization: "" }],
        ["the root key reads no tenant data", "POST", "/api/v1/search/find", { query: "x" }, "403 code=PERMISSION_DENIED", { Authorization: `Bearer ${root}` }],
        ["X-API-Key", "GET", "/api/v1/system/status", undefined, "200", { Authorization: "", "X-API-Key": server.apiKey! }],
      ]);
      const status = await call(server, "GET", "/api/v1/system/status", undefined, wrong);
      assertEquals([status.json.status, status.headers.get("www-authenticate")], ["error", null]);
      const m = await call(server, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }, sse);
      assertEquals([m.status, m.json], [401, {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32001, message: "Invalid API key" },
      }]);
    });

    await t.step("identity comes from the key; account/user headers are ignored", async () => {
      const who = { "X-OpenViking-Account": "someone-else", "X-OpenViking-User": "mallory" };
      const r = await call(server, "GET", "/api/v1/system/status", undefined, who);
      assertEquals([r.status, obj(r.json.result).user], [200, server.user], r.text);
    });
  } finally {
    await server.stop();
  }
});
