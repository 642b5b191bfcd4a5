/**
 * README's "Server with API keys", word for word, against the REAL OpenViking 0.5.2 in api_key mode with
 * nothing but its root key: the section's command (run through `sh` from the checkout, the root key on
 * stdin) leaves a user key that memory works with — recall, capture, status, doctor — and the root key
 * nowhere. Then the fake OpenViking the process tests use is held to the real server's answers for every
 * request of that flow. Skipped like the other real-server tests (`OPENVIKING_REAL=0`, or no server here).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import {
  OpenVikingUnavailable,
  type RealOpenViking,
  startRealOpenViking,
} from "../support/real-openviking.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { ROOT, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { isolatedEnv } from "../install/helpers.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const SESSION = "session_5ec0e7a1-0000-4000-8000-0000000000e2";
const readme = await Deno.readTextFile(`${ROOT}/README.md`);

/** The shell lines of the section's code block. */
function sectionCommands(): string[] {
  const start = readme.indexOf("### Server with API keys");
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assertTrue(block !== undefined, "README's section has a sh block");
  return block!.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
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
  name: 'README "Server with API keys" word for word against the real OpenViking in api_key mode',
  ignore: REAL === "0" || Deno.env.get("OPENVIKING_E2E_URL") !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  let server: RealOpenViking;
  try {
    server = await startRealOpenViking({ auth: "api_key", makeUser: false });
  } catch (e) {
    if (!(e instanceof OpenVikingUnavailable) || REAL === "1") throw e;
    console.log(`SKIP README api-key section: ${e.message}`);
    return;
  }
  await using dir = await tempDir();
  const root = server.rootApiKey!;
  const home = `${dir.path}/home`;
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  const env = isolatedEnv(home, { OPENVIKING_TIMEOUT_MS: "30000" });
  const outputs: string[] = [];
  const cli = async (args: string[], stdin?: string) => {
    const r = await runCli(args, { env, clearEnv: true, cwd: dir.path, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  try {
    await t.step("the section's command, with the root key on stdin", async () => {
      const commands = sectionCommands();
      assertEquals(commands, ["deno task -q install --url http://127.0.0.1:1933 --api-key-stdin"]);
      for (const line of commands) {
        const r = await runProcess("sh", ["-c", line.replace("http://127.0.0.1:1933", server.url)], {
          cwd: ROOT,
          env,
          clearEnv: true,
          stdin: `${root}\n`,
        });
        outputs.push(r.stdout, r.stderr);
        assertEquals(r.code, 0, r.stdout + r.stderr);
        assertMatch(
          r.stdout,
          /install made user default in account default and saves that user's key instead/,
        );
      }
      const saved = JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`));
      assertEquals(saved.url, server.url);
      assertTrue(typeof saved.api_key === "string" && saved.api_key !== root, "a user key is saved");
    });

    await t.step("memory works with the saved key: recall, capture, status, doctor", async () => {
      await placeJournal(
        home,
        SESSION,
        new JournalBuilder().simpleTurn("I indent with tabs.", "Noted.").toString(),
      );
      const payload = (e: Record<string, unknown>) =>
        JSON.stringify({ session_id: SESSION, cwd: dir.path, ...e });
      await cli(["hook", "user-prompt-submit"], payload({ prompt: "how do I indent?" }));
      env.OPENVIKING_WRITE_PATH_ASYNC = "0";
      env.OPENVIKING_CAPTURE_WAIT_MS = "0";
      await cli(["hook", "stop"], payload({}));
      const status = JSON.parse((await cli(["status", "--json", "--session", SESSION])).stdout);
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
      "again: the same user's key is reused; the root key is in no file and no output",
      async () => {
        const before = JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key;
        const again = await cli(["install", "--url", server.url, "--api-key-stdin"], `${root}\n`);
        assertEquals(again.code, 0, again.stderr);
        assertMatch(again.stdout, /install reused the key of user default in account default/);
        assertEquals(JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key, before);
        assertEquals(await filesHolding(home, root), []);
        for (const o of outputs) {
          assertTrue(!o.includes(root), `an output holds the root key: ${o.slice(0, 300)}`);
        }
      },
    );

    await t.step("the fake answers this flow as the real server does", async () => {
      await using fake = await FakeOpenViking.start({ rootKey: root });
      const flow: [string, string, unknown?][] = [
        ["POST", "/api/v1/search/find", { query: "x", limit: 1 }],
        ["GET", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F&simple=true&node_limit=1"],
        ["GET", "/api/v1/system/status"],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/nope/users", { user_id: "bob", role: "user" }],
        ["GET", "/api/v1/admin/accounts/parity/users?name=bob"],
        ["POST", "/api/v1/admin/accounts/parity/users/bob/key", {}],
      ];
      for (const [method, path, body] of flow) {
        const real = await shape(server.url, method, path, root, body);
        assertEquals(await shape(fake.url, method, path, root, body), real, `${method} ${path}`);
      }
      for (const path of ["/api/v1/system/status", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F"]) {
        const real = await shape(server.url, "GET", path, "wrong-key");
        assertEquals(await shape(fake.url, "GET", path, "wrong-key"), real, `a wrong key on ${path}`);
      }
    });
  } finally {
    await server.stop();
  }
});
