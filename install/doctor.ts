/**
 * `openviking-kimi doctor [--json] [--kimi-home DIR]`: tells why memory does not work. Each check reports
 * ok / info / warn / fail with the fix; the exit code is 1 when any check fails. Never prints a credential.
 * The checks: Kimi's side (doctor-kimi.ts), the registered program (doctor-program.ts), our home and state
 * directories (doctor-home.ts), the server, the queue and the captures (doctor-memory.ts).
 */

import { printable, reportJson } from "../lib/neutralize.ts";
import { loadConfig } from "../openviking/config.ts";
import { scrub } from "../lib/scrub.ts";
import { type Env, orNoHome, processEnv } from "../lib/paths.ts";
import type { Check, CheckStatus } from "./check.ts";
import { captureChecks, queueCheck, recallChecks, serverChecks } from "./doctor-memory.ts";
import { homeChecks } from "./doctor-home.ts";
import { kimiChecks, registrationChecks } from "./doctor-kimi.ts";
import { commandChecks, type RunShell } from "./doctor-program.ts";
import { VERSION } from "../lib/version.ts";
import { invocationCwd } from "../lib/self.ts";
import { kimiHomeFor, readKimiState } from "./detect.ts";
import { currentOs, type OsFamily } from "./placement.ts";

export type { Check } from "./check.ts";
// Where each event is registered, as doctor reports it (install's tests compare with it).
export { registrations } from "./doctor-kimi.ts";

/** What doctor needs, injectable for tests. */
export interface DoctorContext {
  env: Env;
  home: string;
  /** Where doctor runs: its workspace's `.openviking/config*.json` are read like a hook's. */
  cwd?: string;
  os: OsFamily;
  now: number;
  /** Runs a shell command line in `cwd`; returns exit code and output. */
  runShell?: RunShell;
  fetch?: typeof fetch;
}

/** The settings that were ignored, with their fix. */
function settingsCheck(warnings: string[]): Check[] {
  return warnings.length
    ? [{
      id: "settings",
      status: "warn",
      summary: "some settings were ignored",
      detail: warnings,
      fix: "correct the values named above (environment or ~/.openviking/ovcli.conf); " +
        "a workspace file may only make memory stricter: set the others in ~/.openviking/ovcli.conf",
    }]
    : [];
}

/**
 * Runs one part of doctor; whatever it throws becomes a failing check that says what could not be checked
 * (doctor itself never crashes: it is what a user runs when something is broken).
 */
async function guarded(id: string, what: string, part: () => Check[] | Promise<Check[]>): Promise<Check[]> {
  try {
    return await part();
  } catch (error) {
    return [{
      id,
      status: "fail",
      summary: `doctor could not check ${what}: ${(error as Error)?.message ?? String(error)}`,
      fix: "fix what the message names and run doctor again; if it persists, report it with this output",
    }];
  }
}

/** Runs every check. */
export async function runDoctor(ctx: DoctorContext): Promise<Check[]> {
  const homes = await guarded("home", "the home directory", () => homeChecks(ctx.env));
  const { config, warnings } = await loadConfig(ctx.env, ctx.cwd);
  const server = () => guarded("server", "the server", () => serverChecks(config, ctx.fetch));
  // Without Kimi's home there is nothing on disk to inspect; the server is still worth a look.
  if (!ctx.home) return scrub([...homes, ...await server()], [config.apiKey]) as Check[];
  const state = await readKimiState(ctx.home);
  const checks: Check[] = [
    ...await guarded("kimi-home", "Kimi's home", () => kimiChecks(ctx.home, state)),
    ...await guarded("hooks", "the registrations", () => registrationChecks(state)),
    ...await guarded("command", "the registered program", () => commandChecks(ctx, state)),
    ...homes,
    ...settingsCheck(warnings),
    ...await server(),
  ];
  if (homes.every((c) => c.id !== "home" || c.status !== "fail")) {
    checks.push(
      ...await guarded("queue", "the pending queue", async () => [await queueCheck(ctx.env, ctx.now)]),
    );
    const answers = !checks.some((c) => (c.id === "server" || c.id === "auth") && c.status === "fail");
    checks.push(...await guarded("captures", "the captures", () => captureChecks(ctx.env, config, answers)));
    checks.push(...await guarded("recall", "the recall breaker", () => recallChecks(ctx.env, config)));
  }
  // A server's error text may quote the key back (`invalid api key: Bearer …`): nothing leaves unscrubbed.
  return scrub(checks, [config.apiKey]) as Check[];
}

const MARK: Record<CheckStatus, string> = { ok: "✓", info: "·", warn: "!", fail: "✗" };

/** Renders checks as text. */
export function renderChecks(checks: readonly Check[]): string {
  const lines = [`openviking-kimi doctor ${VERSION}`];
  for (const c of checks) {
    lines.push(`${MARK[c.status]} ${c.id}: ${c.summary}`);
    for (const d of c.detail ?? []) lines.push(`    ${d}`);
    if (c.fix && (c.status === "fail" || c.status === "warn")) lines.push(`    fix: ${c.fix}`);
  }
  const failed = checks.filter((c) => c.status === "fail").length;
  lines.push(failed ? `${failed} problem(s) found.` : "Everything needed for memory is in place.");
  return lines.join("\n");
}

/** Options of `openviking-kimi doctor` (parsed by cli/commands.ts). */
export interface DoctorOptions {
  json: boolean;
  /** `--kimi-home`, when given. */
  kimiHome: string | undefined;
}

/** `openviking-kimi doctor [--json] [--kimi-home DIR]` */
export async function doctorCommand(options: DoctorOptions): Promise<number> {
  const { json, kimiHome: explicitHome } = options;
  const env = processEnv();
  let checks: Check[];
  try {
    // "" without a home: the checks say so instead of looking at a directory relative to here.
    const cwd = invocationCwd(env);
    const home = orNoHome(() => kimiHomeFor(env, explicitHome, cwd)) ?? "";
    checks = await runDoctor({ env, home, os: currentOs(), now: Date.now(), cwd });
  } catch (error) {
    checks = await guarded("doctor", "the setup", () => Promise.reject(error));
  }
  const ok = !checks.some((c) => c.status === "fail");
  // A server's words (its version, a proxy's page) are printed as a person may safely read them.
  if (json) console.log(reportJson({ version: VERSION, ok, checks }, 2));
  else console.log(printable(renderChecks(checks)));
  return ok ? 0 : 1;
}
