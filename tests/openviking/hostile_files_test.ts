/**
 * Hostile files where a config, credential or state file goes, or Kimi's session index: a FIFO or a link to a
 * device is never opened (it would hang the hook), and the hook still answers as it would without them.
 */

import { assertEquals } from "../support/assert.ts";
import { FAKE_DIGEST_FIRST, FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const SESSION = "session_hostile-files";

const mkfifo = async (path: string) =>
  assertEquals((await new Deno.Command("mkfifo", { args: [path] }).output()).code, 0, path);

Deno.test("prompt hook in a repository whose config links to /dev/zero, with FIFOs for the user's files: it answers", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const repo = `${dir.path}/repo`;
  await Deno.mkdir(`${repo}/.openviking`, { recursive: true });
  await Deno.symlink("/dev/zero", `${repo}/.openviking/config.json`);
  await mkfifo(`${repo}/.openviking/config.local.json`);
  await Deno.mkdir(`${dir.path}/.openviking/state`, { recursive: true, mode: 0o700 });
  for (const f of ["ovcli.conf", "ov.conf"]) {
    await mkfifo(`${dir.path}/.openviking/${f}`);
  }
  const stdin = JSON.stringify({
    hook_event_name: "UserPromptSubmit",
    session_id: SESSION,
    cwd: repo,
    prompt: [{ type: "text", text: "how should I indent this file?" }],
  });
  // Before: /dev/zero was read until memory ran out, a FIFO until someone wrote to it; nothing printed.
  const r = await hookIn("user-prompt-submit", { env: sandboxEnv(dir.path, fake.url), stdin });
  assertEquals(r.stdout, `${FAKE_DIGEST_FIRST}\n`);
  assertEquals(fake.requestsTo("POST /api/v1/search/search").length, 1, "the context face asked");
});

Deno.test("Stop with Kimi's session index a FIFO: the journal is found by the scan and the turn captured", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const session = "session_fifo-index";
  await placeJournal(dir.path, session, new JournalBuilder().simpleTurn("question", "answer").toString());
  const index = `${dir.path}/.kimi-code/session_index.jsonl`;
  await Deno.remove(index);
  await mkfifo(index);
  const env = sandboxEnv(dir.path, fake.url, {
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
  });
  const stdin = JSON.stringify({ hook_event_name: "Stop", session_id: session, cwd: "/home/user/proj" });
  // Before: the worker read the FIFO until someone wrote to it; every Stop left one more hung.
  const r = await runCli(["hook", "stop"], { env, clearEnv: true, stdin, timeoutMs: 20_000 });
  assertEquals(r.code, 0);
  assertEquals(fake.messages(`kc-${session}`).length, 2, "the session's turn captured");
});
