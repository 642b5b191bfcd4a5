/**
 * Security review, each point a test: private file modes everywhere we write, no path escape through session
 * ids, and the API key never in logs, error output, files we write, or Kimi's files (the hook and MCP
 * command lines).
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { walk } from "../chaos/audit.ts";

const KEY = "sk-ov-SECRET-4f9c2a7e1b3d";
const SESSION = "session_5ec0e7a1-0000-4000-8000-000000000001";
/** Text inside `<private>`: it never leaves the prompt, not even into our own files. */
const PRIVATE = "my-private-note-7f3e91";

/** A full life in a sandbox: install with a key, every hook with the server up and down, mcp, doctor. */
async function liveASession(home: string, fake: FakeOpenViking, down: string) {
  const env = {
    HOME: home,
    KIMI_CODE_HOME: `${home}/.kimi-code`,
    OPENVIKING_DEBUG: "1",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_TIMEOUT_MS: "1000",
    OPENVIKING_COMMIT_POLICY: "every-turn", // no idle watch outliving the sandbox
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const outputs: string[] = [];
  const run = async (args: string[], stdin?: string, extra: Record<string, string> = {}) => {
    const r = await runCli(args, { env: { ...env, ...extra }, clearEnv: true, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  await Deno.writeTextFile(`${home}/.kimi-code/config.toml`, `# mine\ndefault_model = "k"\n`);
  const install = await run(["install", "--url", fake.url, "--api-key", KEY, "--yes"]);
  assertEquals(install.code, 0, install.stderr);
  const journal = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);
  await placeJournal(home, SESSION, await Deno.readTextFile(journal));
  const payload = (e: Record<string, unknown>) => JSON.stringify({ session_id: SESSION, cwd: home, ...e });
  await run(["hook", "session-start"], payload({ source: "startup" }));
  await run(["hook", "user-prompt-submit"], payload({ prompt: `my key is ${KEY}, how do I indent?` }));
  await run(
    ["hook", "user-prompt-submit"],
    payload({ prompt: `<private>${PRIVATE}</private> which indent does this project use?` }),
  );
  await run(
    ["hook", "pre-tool-use"],
    payload({ tool_name: "Read", tool_input: { file_path: "viking://x" } }),
  );
  const params = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } };
  await run(["mcp"], `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params })}\n`);
  await run(["doctor", "--json"]);
  // server down: the prompt gets nothing, the capture queues, errors are logged
  await run(["hook", "user-prompt-submit"], payload({ prompt: "second question about tabs" }), {
    OPENVIKING_URL: down,
  });
  await run(["hook", "stop"], payload({}), { OPENVIKING_URL: down, OPENVIKING_WRITE_PATH_ASYNC: "0" });
  await run(["replay"], undefined, { OPENVIKING_URL: down });
  await run(["status"]);
  await run(["status", "--json", "--all"]);
  return outputs;
}

Deno.test("security: every file we write is 0600 and every directory 0700; the key is nowhere but ovcli.conf", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: KEY });
  const gone = await FakeOpenViking.start();
  const down = gone.url;
  await gone.close();
  const outputs = await liveASession(dir.path, fake, down);
  const ours = await walk(`${dir.path}/.openviking`);
  assertTrue(ours.some((f) => f.path.includes("/pending/")), "the offline queue was used");
  assertTrue(ours.some((f) => f.path.endsWith("kimicode-hooks.log")), "the debug log was written");
  assertTrue(ours.some((f) => f.path.includes("/ledger/kimicode/")), "the ledger was written");
  for (const f of ours) {
    if (f.path.includes("/agent-integrations/") && f.path.includes("/bin/")) continue; // an executable copy
    assertEquals(f.mode & 0o077, 0, `${f.path} is private (mode ${f.mode.toString(8)})`);
  }
  // The key: only in ovcli.conf (no copy of it) — not in logs, state, queue, Kimi's config (our hook and MCP
  // command lines) or outputs.
  for (const f of [...ours, ...(await walk(`${dir.path}/.kimi-code`))]) {
    if (f.isDir || f.path.endsWith("/.openviking/ovcli.conf")) continue;
    const text = await Deno.readTextFile(f.path).catch(() => "");
    assertTrue(!text.includes(KEY), `${f.path} must not contain the API key`);
    assertTrue(!text.includes(PRIVATE), `${f.path} must not contain <private> text`);
  }
  for (const o of outputs) {
    assertTrue(!o.includes(KEY), `command output must not contain the API key: ${o.slice(0, 200)}`);
    assertTrue(!o.includes(PRIVATE), `command output must not contain <private> text: ${o.slice(0, 200)}`);
  }
  assertTrue(fake.requests.length > 0, "the authenticated server was used");
  const search = fake.requestsTo("POST /api/v1/search/search");
  assertTrue(search.length > 0, "recall ran against the authenticated server");
  for (const r of search) {
    assertTrue(
      !JSON.stringify(r.body).includes(KEY),
      "a key pasted into a prompt never leaves as a recall query",
    );
  }
  const mode = (await Deno.stat(`${dir.path}/.openviking/ovcli.conf`)).mode! & 0o777;
  assertEquals(mode, 0o600);
});

Deno.test("security: hostile session ids never reach a path outside the state directory (in-process)", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = {
    HOME: dir.path,
    KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
    OPENVIKING_URL: fake.url,
    PATH: "/usr/bin:/bin",
  };
  const ids = ["../../../../tmp/escape", "a/b", "a\\b", "x\u0000y", "..", "/etc/passwd", "s".repeat(300)];
  for (const id of ids) {
    for (const event of ["user-prompt-submit", "interrupt", "session-start"]) {
      await hookIn(event, {
        env,
        stdin: JSON.stringify({ session_id: id, cwd: dir.path, prompt: "a question about tabs" }),
      });
    }
  }
  const files = await walk(dir.path);
  for (const f of files) {
    assertTrue(
      f.path.startsWith(`${dir.path}/.openviking/`) || f.path.startsWith(`${dir.path}/.kimi-code`) ||
        f.path === `${dir.path}/.openviking`,
      f.path,
    );
    const rel = f.path.slice(dir.path.length);
    assertTrue(!rel.includes(".."), `no traversal component in ${rel}`);
  }
  assertEquals(await Deno.stat("/tmp/escape").then(() => true, () => false), false);
  // OpenViking session ids sent to the server are safe too
  for (const r of fake.requests) {
    assertTrue(!/\.\.|%2F|\\/i.test(r.path.replace(/^\/api\/v1\/sessions\//, "")), r.path);
  }
});
