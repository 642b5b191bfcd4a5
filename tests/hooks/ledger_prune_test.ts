/** The ledger is pruned at session start, at most once a day (README "What memory did"). */

import { assertEquals } from "../support/assert.ts";
import { world } from "./world.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const FORTY_DAYS = 40 * 86_400_000;

/** Writes a ledger file of the home `home` last touched `ageMs` ago; its path. */
async function ledgerFile(home: string, name: string, ageMs: number): Promise<string> {
  const ledger = `${home}/.openviking/ledger/kimicode`;
  await Deno.mkdir(ledger, { recursive: true, mode: 0o700 });
  const file = `${ledger}/${name}.jsonl`;
  await Deno.writeTextFile(file, "{}\n", { mode: 0o600 });
  const t = new Date(Date.now() - ageMs);
  await Deno.utime(file, t, t);
  return file;
}

Deno.test("ledger: a 40-day-old session's file is pruned by session start's detached worker", async () => {
  await using w = await world({ env: { OPENVIKING_WRITE_PATH_ASYNC: "1", [WORKER_ENV]: "1" } });
  const [old, recent] = [
    await ledgerFile(w.home, "session_old", FORTY_DAYS),
    await ledgerFile(w.home, "session_recent", 0),
  ];
  await w.hook("session-start", { source: "startup" }, "session_new");
  assertEquals([await exists(old), await exists(recent)], [false, true], "a recent one stays");
});

Deno.test("session start sweeps the whole home (ledger, temp files) at most once a day, inline too", async () => {
  await using w = await world({ env: { OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  const stamp = `${w.home}/.openviking/state/kimicode-housekeeping.json`;
  await Deno.mkdir(`${w.home}/.openviking/state`, { recursive: true, mode: 0o700 });
  const start = async (session: string) => {
    const old = await ledgerFile(w.home, "session_old", FORTY_DAYS);
    await w.hook("session-start", { source: "startup" }, session);
    return await exists(old);
  };
  const swept = async (ago: number) => {
    const t = new Date(Date.now() - ago);
    await Deno.writeTextFile(stamp, `{"at":${t.getTime()}}\n`, { mode: 0o600 });
    await Deno.utime(stamp, t, t);
  };
  await swept(3600_000);
  assertEquals(await start("session_a"), true, "swept an hour ago: not again");
  await swept(25 * 3600_000);
  assertEquals(await start("session_b"), false, "swept a day ago: the 40-day-old file goes now");
  assertEquals(await start("session_c"), true, "and then not again for a day");
});
