import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { ROOT } from "../support/run.ts";
import { readLedger } from "../../memory/ledger.ts";

/** Runs `script` (given the directory and a writer's name as arguments) in one process per writer, at once. */
async function writers(dir: string, script: string, names: string[], beforeStart?: () => Promise<void>) {
  const path = `${dir}/w.ts`;
  await Deno.writeTextFile(path, script);
  const run = (who: string) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", `${ROOT}/deno.json`, path, dir, who],
      stdout: "null",
    }).output();
  const done = Promise.all(names.map(run));
  await beforeStart?.();
  assertTrue((await done).every((o) => o.success), "every writer finished");
}

Deno.test("ledger: three processes appending while files are compacted never mix their lines and lose none", async () => {
  await using dir = await tempDir();
  // Each of 40 sessions gets ~1.1 times its 64 KB budget from three writers at once: one compaction each, so
  // every line after the half it keeps is still there. Lines are numbered per writer: what survives of one
  // writer in a session must be an unbroken run ending at its last line — a line lost to a compaction is a gap.
  const LINES = 110;
  const script = `
    import { appendLedger } from "${new URL("../../memory/ledger.ts", import.meta.url).href}";
    const [dir, who] = Deno.args;
    while (!(await Deno.stat(dir + "/go").then(() => true, () => false))) await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < ${LINES}; i++) {
      for (let s = 0; s < 40; s++) {
        await appendLedger(dir, "s" + s, { kind: "prompt", at: i, ms: 1, prompt: who.repeat(120), path: "none",
          injected: [], suppressed: [], printedChars: 0 }, { ledgerMaxBytes: 1024, ledgerMaxAgeDays: 30 });
      }
    }`;
  const names = ["a", "b", "c"];
  await writers(dir.path, script, names, async () => {
    await new Promise((r) => setTimeout(r, 1500)); // all three have started and wait
    await Deno.writeTextFile(`${dir.path}/go`, "");
  });
  const broken: string[] = [];
  for (let s = 0; s < 40; s++) {
    const entries = await readLedger(dir.path, `s${s}`);
    assertTrue(entries.length < 3 * LINES, `s${s} was compacted`);
    assertTrue(entries.every((e) => e.kind === "prompt" && /^(a+|b+|c+)$/.test(e.prompt)), "no line mixed");
    for (const who of names) {
      const seen = entries.filter((e) => e.kind === "prompt" && e.prompt.startsWith(who)).map((e) => e.at);
      const from = seen[0] ?? LINES;
      const missing = Array.from({ length: LINES - from }, (_, i) => from + i).filter((n) =>
        !seen.includes(n)
      );
      if (!seen.length || missing.length) broken.push(`s${s}/${who}: kept from ${from}, missing ${missing}`);
    }
  }
  assertEquals(broken, []);
});
