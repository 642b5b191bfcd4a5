/**
 * The ledger is pruned at session start, at most once a day (README "What memory did"), through the real entry point:
 * whether the session start replays the queue in its detached worker or, with detached writes off, inline.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, sandboxEnv } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

for (const asyncWrites of ["1", "0"]) {
  Deno.test(`ledger: a 40-day-old session's file is pruned at session start (detached writes ${asyncWrites})`, async () => {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_WRITE_PATH_ASYNC: asyncWrites });
    const ledger = `${dir.path}/.openviking/ledger/kimicode`;
    await Deno.mkdir(ledger, { recursive: true, mode: 0o700 });
    const old = `${ledger}/session_old.jsonl`;
    const recent = `${ledger}/session_recent.jsonl`;
    for (const f of [old, recent]) await Deno.writeTextFile(f, "{}\n", { mode: 0o600 });
    const fortyDays = new Date(Date.now() - 40 * 86_400_000);
    await Deno.utime(old, fortyDays, fortyDays);
    const r = await runCli(["hook", "session-start"], {
      env,
      clearEnv: true,
      stdin: JSON.stringify({
        hook_event_name: "SessionStart",
        session_id: "session_new",
        cwd: dir.path,
        source: "startup",
      }),
    });
    assertEquals([r.code, r.stdout], [0, ""]);
    // Inline, the pruning is done when the hook exits; the detached worker is waited for.
    const end = Date.now() + (asyncWrites === "1" ? 20_000 : 0);
    while (await exists(old) && Date.now() < end) await new Promise((res) => setTimeout(res, 100));
    assertEquals(await exists(old), false, "the 40-day-old file is gone");
    assertEquals(await exists(recent), true, "a recent one stays");
  });
}

Deno.test("session start sweeps the whole home (ledger, temp files) at most once a day: its cost does not follow the history", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_WRITE_PATH_ASYNC: "0" });
  const ledger = `${dir.path}/.openviking/ledger/kimicode`;
  const stamp = `${dir.path}/.openviking/state/kimicode-housekeeping.json`;
  await Deno.mkdir(ledger, { recursive: true, mode: 0o700 });
  await Deno.mkdir(`${dir.path}/.openviking/state`, { recursive: true, mode: 0o700 });
  const old = `${ledger}/session_old.jsonl`;
  const start = async (session: string) => {
    const fortyDays = new Date(Date.now() - 40 * 86_400_000);
    await Deno.writeTextFile(old, "{}\n", { mode: 0o600 });
    await Deno.utime(old, fortyDays, fortyDays);
    const r = await hookIn("session-start", {
      env,
      stdin: JSON.stringify({
        hook_event_name: "SessionStart",
        session_id: session,
        cwd: dir.path,
        source: "startup",
      }),
    });
    assertEquals(r.stdout, "");
    return await exists(old);
  };
  const swept = (at: number) =>
    Deno.writeTextFile(stamp, `{"at":${at}}\n`, { mode: 0o600 }).then(() => {
      const t = new Date(at);
      return Deno.utime(stamp, t, t);
    });
  await swept(Date.now() - 3600_000);
  assertEquals(await start("session_a"), true, "swept an hour ago: not again");
  await swept(Date.now() - 25 * 3600_000);
  assertEquals(await start("session_b"), false, "swept a day ago: swept now");
  assertEquals(await start("session_c"), true, "and then not again for a day");
});
