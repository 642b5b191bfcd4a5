/**
 * `deno run … scripts/smoke.ts <executable>`: the smoke test the release workflow runs on each platform's
 * compiled binary before it is uploaded. In an empty temporary home, against the fake OpenViking on
 * 127.0.0.1: `version` prints this version (exit 0); `doctor --json` reports, as JSON, that nothing is
 * registered (exit 1); one prompt hook prints the recall block (exit 0); one Stop exits 0 at once and its
 * detached worker captures the turn. Any other outcome fails the script (exit 1) naming the step.
 *
 * Any executable that behaves like the binary passes, so the script is tested against a stand-in (a
 * launcher of this checkout) where the binary cannot be built.
 */

import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { placeJournal } from "../tests/support/hook-context.ts";
import { runProcess, type RunResult } from "../tests/support/run.ts";
import { VERSION } from "../lib/version.ts";

/** What one run of the executable gave. */
type Ran = RunResult;

/** Runs `exe args` with `stdin` in the smoke home's environment. */
async function run(exe: string, args: string[], env: Record<string, string>, stdin = ""): Promise<Ran> {
  return await runProcess(exe, args, { env, clearEnv: true, cwd: env.HOME, stdin, timeoutMs: 60_000 });
}

/** A failed step: what was expected, and what the run gave. */
class StepFailed extends Error {}

function expect(step: string, ok: boolean, ran: Ran, wanted: string): void {
  if (ok) {
    console.error(`smoke: ✓ ${step}`);
    return;
  }
  throw new StepFailed(
    `${step}: expected ${wanted}; got exit ${ran.code}\n--- stdout\n${
      ran.stdout.slice(0, 2000)
    }\n--- stderr\n${ran.stderr.slice(0, 2000)}`,
  );
}

/** The environment of an empty home (PATH kept: Windows needs its system directories). */
function homeEnv(home: string, url: string): Record<string, string> {
  const env: Record<string, string> = {
    HOME: home,
    USERPROFILE: home,
    KIMI_CODE_HOME: `${home}/.kimi-code`,
    OPENVIKING_URL: url,
    OPENVIKING_TIMEOUT_MS: "5000",
    OPENVIKING_COMMIT_POLICY: "every-turn", // the Stop step leaves no idle watch running for 300 s
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  };
  for (const k of ["SystemRoot", "TEMP", "TMP", "DENO_DIR"]) {
    const v = Deno.env.get(k);
    if (v) env[k] = v;
  }
  return env;
}

/** Waits until `ready()` or the deadline; returns whether it became ready. */
async function waitFor(ready: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!ready() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return ready();
}

/** `doctor --json` on an empty home: JSON saying nothing is registered, exit 1. */
async function doctorStep(exe: string, env: Record<string, string>): Promise<void> {
  const doctor = await run(exe, ["doctor", "--json"], env);
  let report: { ok?: boolean; checks?: { id: string; status: string }[] } = {};
  try {
    report = JSON.parse(doctor.stdout);
  } catch {
    report = {};
  }
  const hooks = report.checks?.find((c) => c.id === "hooks")?.status;
  expect(
    "doctor --json on an empty home",
    doctor.code === 1 && report.ok === false && hooks === "fail",
    doctor,
    'exit 1 and JSON with ok false and the "hooks" check failing (nothing is installed)',
  );
}

/** One prompt hook (the recall block on stdout), then one Stop (exit 0 at once, its worker captures). */
async function hookSteps(exe: string, env: Record<string, string>, fake: FakeOpenViking): Promise<void> {
  const home = env.HOME;
  const sid = "session_00000000-0000-4000-8000-00000000501e";
  const prompt = await run(
    exe,
    ["hook", "user-prompt-submit"],
    env,
    JSON.stringify({ session_id: sid, cwd: home, prompt: [{ type: "text", text: "how do I indent?" }] }),
  );
  expect(
    "prompt hook",
    prompt.code === 0 && prompt.stdout.includes("<openviking-context") && prompt.stderr === "",
    prompt,
    "exit 0, the recall block on stdout and nothing on stderr",
  );
  await placeJournal(home, sid, new JournalBuilder().simpleTurn("remember: tabs", "Noted: tabs.").toString());
  const stop = await run(
    exe,
    ["hook", "stop"],
    env,
    JSON.stringify({ session_id: sid, cwd: home, stop_hook_active: false }),
  );
  const captured = await waitFor(() => fake.messages(`kc-${sid}`).length >= 2, 20_000);
  expect(
    "Stop hook (its detached worker captures the turn)",
    stop.code === 0 && stop.stdout === "" && captured,
    stop,
    `exit 0, no output, and the turn stored in kc-${sid} within 20 s (stored: ${
      fake.messages(`kc-${sid}`).length
    })`,
  );
}

/** Runs every step against `exe`; returns the exit code. */
export async function smoke(exe: string): Promise<number> {
  const home = await Deno.makeTempDir({ prefix: "openviking-kimi-smoke-" });
  const fake = await FakeOpenViking.start();
  try {
    const env = homeEnv(home, fake.url);
    const version = await run(exe, ["version"], env);
    expect(
      "version",
      version.code === 0 && version.stdout.trim() === VERSION,
      version,
      `exit 0 and ${VERSION}`,
    );
    await doctorStep(exe, env);
    await hookSteps(exe, env, fake);
    console.error(`smoke: ${exe} passed`);
    return 0;
  } catch (error) {
    if (!(error instanceof StepFailed)) throw error;
    console.error(`smoke: FAILED ${error.message}`);
    return 1;
  } finally {
    await fake.close();
    // A detached worker may still be finishing: give it a moment before its home goes.
    await new Promise((r) => setTimeout(r, 300));
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const exe = Deno.args[0];
  if (!exe || Deno.args.length !== 1) {
    console.error("usage: deno run -A --config tests/deno.json scripts/smoke.ts <executable>");
    Deno.exit(2);
  }
  Deno.exit(await smoke(exe));
}
