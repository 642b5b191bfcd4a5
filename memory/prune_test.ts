/** The pruning of old session states (memory/state.ts pruneStates): bounded readers, nothing owed lost, a resume asks. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { withLock } from "../lib/lock.ts";
import { secretPrint } from "../lib/redact.ts";
import {
  machinePrints,
  PRINT_STATES,
  pruneStates,
  STATE_RETENTION_MS,
  statePaths,
  updateState,
} from "./state.ts";

Deno.test("pruneStates: old states owing nothing go (past the newest the proxy reads); owed, held and new ones stay; a pruned one resumed asks the server", async () => {
  await using home = await tempDir("ovk-prune-");
  const dir = home.path;
  const now = Date.now();
  const day = 86_400_000;
  const write = async (name: string, state: object, ageMs: number) => {
    const file = `${dir}/${name}`;
    await Deno.writeTextFile(file, JSON.stringify(state));
    const at = new Date(now - ageMs);
    await Deno.utime(file, at, at);
  };
  const old = 1000;
  for (let i = 0; i < old; i++) { // the newest of them is 31 days old, then a minute older each
    await write(
      `s${i}.json`,
      { secretPrints: [secretPrint(`Secret${i}xyz`)] },
      STATE_RETENTION_MS + day + i * 60_000,
    );
    if (i % 2) await write(`s${i}.prompt.json`, {}, STATE_RETENTION_MS + day + i * 60_000);
  }
  for (let i = 0; i < 3; i++) {
    await write(`new${i}.json`, { secretPrints: [secretPrint(`Fresh${i}xyz`)] }, i * 1000);
  }
  const oldest = STATE_RETENTION_MS + 60 * day;
  await write("owed.json", { ovSession: "kc-owed", capturedSinceCommit: 2, lastCaptureAt: 1 }, oldest);
  await write("unsettled.json", { ovSession: "kc-u", inflight: { keys: ["k"], at: 1 } }, oldest);
  await write("kept.json", {}, oldest);
  await write("kept.prompt.json", { fallbackPrompts: [{ text: "hi", at: 1 }] }, oldest);
  await write("held.json", {}, oldest);
  const before = await machinePrints(dir);
  const held = await withLock(`${dir}/held.json.lock`, () => pruneStates(dir, now));
  assertTrue(held.acquired);
  // The 32 newest stay (3 new, 29 old), as do the four that owe something or were busy: 1000 - 29 go.
  assertEquals(held.value, old - (PRINT_STATES - 3));
  const left = (await Array.fromAsync(Deno.readDir(dir), (e) => e.name)).filter((n) => n.endsWith(".json"));
  const kept = "new0 new1 new2 owed unsettled kept held".split(" ").map((n) => `${n}.json`);
  for (const n of kept) assertTrue(left.includes(n), `${n} kept`);
  assertEquals(left.filter((n) => /^s\d+\.json$/.test(n)).length, PRINT_STATES - 3);
  assertTrue(
    !left.includes(`s${old - 1}.json`) && !left.includes(`s${old - 1}.prompt.json`),
    "both states go",
  );
  assertEquals(await machinePrints(dir), before, "the proxy's prints are the same");
  // A pruned session resumed: its capture asks the server what it holds first; a new one does not.
  const recovered = await updateState(
    await statePaths(dir, `s${old - 1}`),
    (s) => Promise.resolve({ value: s.recover }),
  );
  assertTrue(recovered.acquired && recovered.value !== undefined, "a pruned session's state recovers");
  const fresh = await updateState(
    await statePaths(dir, "never-seen"),
    (s) => Promise.resolve({ value: s.recover }),
  );
  assertEquals(fresh.acquired && fresh.value, undefined);
  assertEquals(await pruneStates(dir, now), 1, "held's turn, once free");
});

Deno.test("pruneStates: a lock a killed run left and a damaged state set aside go after 30 days; a held lock and newer ones stay", async () => {
  await using home = await tempDir("ovk-prune-");
  const dir = home.path;
  const now = Date.now();
  const write = async (name: string, ageMs: number) => {
    await Deno.writeTextFile(`${dir}/${name}`, name.includes("damaged") ? "{broken" : "");
    await Deno.utime(`${dir}/${name}`, new Date(now - ageMs), new Date(now - ageMs));
  };
  const old = STATE_RETENTION_MS + 86_400_000;
  const strays = [
    "gone.json.lock",
    "gone.prompt.json.lock",
    "idle-watch-x.lock",
    `s.json.damaged-${now - old}`,
  ];
  for (const n of strays) await write(n, old);
  const kept = ["busy.json.lock", "new.json.lock", `s.json.damaged-${now - 1000}`];
  for (const n of kept) await write(n, n.startsWith("busy") ? old : 1000);
  const names = async () => (await Array.fromAsync(Deno.readDir(dir), (e) => e.name)).sort();
  const during = await withLock(`${dir}/busy.json.lock`, () => pruneStates(dir, now).then(names));
  assertEquals(during, { acquired: true, value: kept.sort() });
});
