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

Deno.test("ledger: three processes appending while files are rotated never mix their lines and lose none", async () => {
  await using dir = await tempDir();
  // Each of 40 sessions gets ~1.1 times its 64 KB budget from three writers at once: one rotation each, so
  // every line is in the file or its `.1`. Lines are numbered per writer: what is read of one writer in a
  // session must be all of them — a line lost to a rotation is a gap.
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
    assertTrue(await Deno.stat(`${dir.path}/s${s}.1.jsonl`).then(() => true, () => false), `s${s} rotated`);
    assertTrue(entries.every((e) => e.kind === "prompt" && /^(a+|b+|c+)$/.test(e.prompt)), "no line mixed");
    for (const who of names) {
      const seen = entries.filter((e) => e.kind === "prompt" && e.prompt.startsWith(who)).map((e) => e.at);
      const missing = Array.from({ length: LINES }, (_, i) => i).filter((n) => !seen.includes(n));
      if (missing.length) broken.push(`s${s}/${who}: missing ${missing}`);
    }
  }
  assertEquals(broken, []);
});
