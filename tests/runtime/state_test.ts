import { assertEquals, assertTrue } from "../support/assert.ts";
import {
  emptyState,
  machinePrints,
  PRINT_STATES,
  readState,
  type SessionState,
  statePaths,
  updateState,
  writeState,
} from "../../memory/state.ts";
import { safeId } from "../../lib/paths.ts";
import { MAX_PRINTS } from "../../lib/redact.ts";
import { REPLAY_FILE } from "../../memory/ledger.ts";
import { withLock } from "../../lib/lock.ts";
import { removeAbandonedTemps } from "../../lib/fs.ts";
import { tempDir } from "../support/temp.ts";
import { prodRunArgs, ROOT } from "../support/run.ts";

Deno.test("safeId: no id ever escapes its folder, nor writes to a reserved name like _replay (a leading _ is hashed)", async () => {
  await using dir = await tempDir();
  const ids = [
    "../x",
    "a/b",
    "a\\b",
    "a\0b",
    "x".repeat(300),
    "..",
    ".",
    "",
    "/etc/passwd",
    "C:\\Windows",
    "é✓",
    REPLAY_FILE,
    "replay",
    "_x",
    "__",
    "_",
  ];
  const seen = new Set<string>();
  for (const id of ids) {
    const safe = await safeId(id);
    assertTrue(/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(safe), `${JSON.stringify(id)} → ${safe}`);
    assertTrue(safe.length <= 100, `${safe.length}`);
    seen.add(safe);
    const { file } = await statePaths(dir.path, id);
    assertEquals(file.slice(0, dir.path.length + 1), `${dir.path}/`);
    assertTrue(!file.slice(dir.path.length + 1).includes("/"), file);
    await writeState(file, emptyState());
  }
  assertEquals(
    [seen.size, [...Deno.readDirSync(dir.path)].length],
    [ids.length, ids.length],
    "distinct stay distinct",
  );
  const kimi = "session_bb98d39e-e56d-47b5-bd98-4e903585486d";
  assertEquals(await safeId(kimi), kimi, "Kimi session ids stay readable");
  assertEquals(await safeId("a_b"), "a_b", "an inner _ is kept");
});

Deno.test("statePaths: no session's capture state is another session's prompt state (ids ending .prompt)", async () => {
  const files = new Set<string>();
  for (const id of ["x", "x.prompt", "x.PROMPT", "x.prompt.prompt", "a b", "a b.prompt"]) {
    for (const kind of ["capture", "prompt"] as const) files.add((await statePaths("/s", id, kind)).file);
  }
  assertEquals(files.size, 12);
  assertEquals(
    (await statePaths("/s", "x", "prompt")).file,
    "/s/x.prompt.json",
    "existing prompt states are found",
  );
  assertEquals((await statePaths("/s", "x")).file, "/s/x.json");
});

Deno.test("state: written 0600 in a 0700 dir, round trips, bad files read as fresh", async () => {
  await using dir = await tempDir();
  const { file } = await statePaths(`${dir.path}/hook-state/kimicode`, "s1");
  const s = { ...emptyState(), capturedKeys: ["0:user"] };
  await writeState(file, s);
  assertEquals((await Deno.stat(file)).mode! & 0o777, 0o600);
  assertEquals((await Deno.stat(`${dir.path}/hook-state/kimicode`)).mode! & 0o777, 0o700);
  assertEquals((await readState(file)).capturedKeys, ["0:user"]);
  await Deno.writeTextFile(file, "{torn");
  assertEquals(await readState(file), emptyState());
  await Deno.writeTextFile(file, JSON.stringify({ version: 1, capturedKeys: "nope", injectedUris: "x" }));
  const partial = await readState(file);
  assertEquals([partial.capturedKeys, partial.injectedUris], [[], []]);
});

Deno.test("machinePrints: the prints of the newest capture states; a damaged one holds none; a change is seen", async () => {
  await using dir = await tempDir();
  const write = async (name: string, prints: string[], minutesAgo: number) => {
    await writeState(`${dir.path}/${name}`, { ...emptyState(), secretPrints: prints });
    const at = new Date(Date.now() - minutesAgo * 60_000);
    await Deno.utime(`${dir.path}/${name}`, at, at);
  };
  for (let i = 0; i <= PRINT_STATES; i++) await write(`s${i}.json`, [`p${i}`], i + 1); // s32 is the oldest
  await write("s32.prompt.json", ["prompt-side"], 0); // s32's session resumed: its prompt ran just now
  await Deno.writeTextFile(`${dir.path}/damaged.json`, "{ torn");
  await Deno.writeTextFile(`${dir.path}/s1.json.damaged-1`, JSON.stringify({ secretPrints: ["aside"] }));
  // s32 is as new as its prompt; the damaged file, as new, counts as one of the states read: s30 and s31 are too old.
  const expected = ["p32", ...Array.from({ length: PRINT_STATES - 2 }, (_, i) => `p${i}`)];
  assertEquals([...await machinePrints(dir.path)].sort(), expected.sort());
  await write("s5.json", ["p5", "p5b"], 0);
  assertTrue((await machinePrints(dir.path)).has("p5b"), "a state written since is read again");
  assertEquals((await machinePrints(`${dir.path}/none`)).size, 0);
});

Deno.test("a state's prints are read as its newest MAX_PRINTS: a damaged or foreign one with 100,000 costs no more", async () => {
  await using dir = await tempDir();
  const prints = Array.from({ length: 100_000 }, (_, i) => `12:${i.toString(36)}:x`);
  await Deno.writeTextFile(`${dir.path}/big.json`, JSON.stringify({ secretPrints: prints }));
  const newest = JSON.stringify(prints.slice(-MAX_PRINTS));
  const read = (await readState(`${dir.path}/big.json`)).secretPrints;
  assertTrue(JSON.stringify(read) === newest, `read ${read.length} prints`);
  const machine = [...await machinePrints(dir.path)];
  assertTrue(JSON.stringify(machine) === newest, `the proxy took ${machine.length}`);
  const seen = await updateState(
    { file: `${dir.path}/big.json`, lock: `${dir.path}/big.json.lock` },
    (s) => Promise.resolve({ value: s.secretPrints.length }),
  );
  assertEquals(seen.acquired && seen.value, MAX_PRINTS, "under the lock too");
});

Deno.test("state keeps at most 1000 capture keys", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/s.json`;
  await writeState(file, { ...emptyState(), capturedKeys: Array.from({ length: 1500 }, (_, i) => `k${i}`) });
  const keys = (await readState(file)).capturedKeys;
  assertEquals([keys.length, keys[0], keys.at(-1)], [1000, "k500", "k1499"]);
});

Deno.test("lock: private (0600 in a 0700 dir: a killed holder leaves it); others wait, and give up without running the work", async () => {
  await using dir = await tempDir();
  const lock = `${dir.path}/hook-state/l.lock`;
  let ran = false;
  const inner = await withLock(lock, async () => {
    const modes = [
      (await Deno.stat(`${dir.path}/hook-state`)).mode! & 0o777,
      (await Deno.stat(lock)).mode! & 0o777,
    ];
    assertEquals(modes, [0o700, 0o600]);
    return withLock(lock, () => Promise.resolve(ran = true), { waitMs: 120, pollMs: 10 });
  });
  assertEquals(inner, { acquired: true, value: { acquired: false } });
  assertEquals(ran, false);
  assertEquals((await withLock(lock, () => Promise.resolve(7))).acquired, true);
});

Deno.test("lock: N concurrent processes incrementing one counter end at exactly N×k", async () => {
  await using dir = await tempDir();
  const procs = 6, k = 15;
  // Under the binary's own permissions: a lock that only works with --allow-all would pass with -A.
  const prodArgs = await prodRunArgs();
  const args = [
    ...prodArgs,
    `${ROOT}/tests/support/lock-counter.ts`,
    `${dir.path}/c.lock`,
    `${dir.path}/counter`,
    `${k}`,
  ];
  const children = Array.from(
    { length: procs },
    () => new Deno.Command(Deno.execPath(), { args, stdout: "null", stderr: "inherit" }).spawn(),
  );
  const codes = await Promise.all(children.map(async (c) => (await c.status).code));
  assertEquals(codes, Array(procs).fill(0));
  assertEquals(Number(await Deno.readTextFile(`${dir.path}/counter`)), procs * k);
});

Deno.test("updateState serialises read-modify-write", async () => {
  await using dir = await tempDir();
  const paths = await statePaths(dir.path, "s");
  const bump = (s: SessionState) =>
    Promise.resolve({ state: { ...s, capturedSinceCommit: s.capturedSinceCommit + 1 }, value: null });
  await Promise.all(Array.from({ length: 20 }, () => updateState(paths, bump, { waitMs: 30_000 })));
  assertEquals((await readState(paths.file)).capturedSinceCommit, 20);
});

Deno.test("kill -9 in the middle of state writes never leaves a torn file", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/state.json`;
  await writeState(file, emptyState());
  for (let round = 0; round < 8; round++) {
    const child = new Deno.Command(Deno.execPath(), {
      args: [...(await prodRunArgs()), `${ROOT}/tests/support/state-writer.ts`, file],
      stdout: "null",
      stderr: "null",
    }).spawn();
    // Let it write for a varying while, then kill it hard.
    await new Promise((r) => setTimeout(r, 150 + round * 37));
    child.kill("SIGKILL");
    await child.status;
    assertEquals(JSON.parse(await Deno.readTextFile(file)).version, 1); // throws on a torn file
  }
});

Deno.test("removeAbandonedTemps: a temp file a killed write left goes after an hour, or at once when its pid is gone", async () => {
  await using dir = await tempDir();
  const child = new Deno.Command("true").spawn();
  await child.status; // a pid nobody has now
  const old = new Date(Date.now() - 2 * 3600_000);
  const files = [
    "s.json.123.abcd.tmp",
    `0-m1.json.${child.pid}.0123abcd.tmp`,
    "fresh.json.9.ffff.tmp",
    "keep.json",
  ];
  for (const f of files) await Deno.writeTextFile(`${dir.path}/${f}`, "x");
  await Deno.utime(`${dir.path}/${files[0]}`, old, old);
  await Deno.writeTextFile(`${dir.path}/0-m2.json.${Deno.pid}.4567cdef.tmp`, "x"); // a live writer's
  assertEquals(await removeAbandonedTemps(dir.path), 2);
  assertEquals([...Deno.readDirSync(dir.path)].map((e) => e.name).sort(), [
    `0-m2.json.${Deno.pid}.4567cdef.tmp`,
    "fresh.json.9.ffff.tmp",
    "keep.json",
  ]);
});

Deno.test("lock: a holder killed with -9 and left a zombie (its parent never reaps it) blocks nobody", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const lock = `${dir.path}/l.lock`;
  const holder = [Deno.execPath(), ...(await prodRunArgs()), `${ROOT}/tests/support/lock-holder.ts`, lock];
  // The holder's parent is `sleep` (sh execs it): nobody waits for the holder, so once killed it stays a zombie.
  const quoted = holder.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(" ");
  const parent = new Deno.Command("sh", {
    args: ["-c", `${quoted} & echo $!; exec sleep 30`],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = parent.stdout.getReader();
    let out = "";
    while (!out.includes("held")) out += new TextDecoder().decode((await reader.read()).value);
    reader.releaseLock();
    const pid = Number(out.split("\n")[0]);
    assertEquals(await withLock(lock, () => Promise.resolve("no"), { waitMs: 100 }), { acquired: false });
    Deno.kill(pid, "SIGKILL");
    const ps = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)] });
    const stat = async () => new TextDecoder().decode((await ps.output()).stdout).trim();
    while (!(await stat()).startsWith("Z")) await new Promise((r) => setTimeout(r, 10));
    const started = Date.now();
    const res = await withLock(lock, () => Promise.resolve("taken"), { waitMs: 2000 });
    assertEquals(res, { acquired: true, value: "taken" }, "a zombie holds no lock");
    assertTrue(Date.now() - started < 500, `taken at once, not after ${Date.now() - started} ms`);
  } finally {
    parent.kill("SIGKILL");
    await parent.status;
  }
});
