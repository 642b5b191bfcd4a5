/**
 * `openviking-kimi install`: the program the registrations run (the compiled binary's copy, or a program copy
 * built from the checkout: program.ts), then a planner per mode — config mode (config-mode.ts: our
 * `config.toml` block and `mcp.json` entry) or plugin mode (plugin-mode.ts: the native plugin directory and
 * its registry record) — each taking the other mode's registration out, after the shared part (ovcli.conf),
 * feeding one plan that run.ts checks and carries out all or nothing. Once installed, it asks the server
 * whether it answers (no server yet?).
 */

import { credentialFilePaths, loadConfig } from "../runtime/config.ts";
import { dirName, joinPath, openVikingHome } from "../runtime/paths.ts";
import { scrub } from "../runtime/scrub.ts";
import { commandName } from "../runtime/self.ts";
import { PLUGIN_ID } from "./spec.ts";
import { type CredentialArgs, maskSecrets, planOvcli } from "./ovcli.ts";
import { type FileChange, makeDirs, readText } from "./files.ts";
import { hasUpstream, kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import { carryOut, type Context, fail, type InstallOptions, newPlan, type Plan } from "./run.ts";
import { fileStep } from "./steps.ts";
import { sweepStep } from "./copy-sweep.ts";
import { serverChecks } from "./doctor-memory.ts";
import { refreshInstalledPrompt } from "./memory-files.ts";
import { planProgram } from "./program.ts";
import { planConfigMode } from "./config-mode.ts";
import { planPluginMode } from "./plugin-mode.ts";

/** Why OpenViking's own plugin stands in the way, where it is registered, and the two ways on. */
function upstreamMessage(state: KimiState): string {
  const found: string[] = [];
  if (state.plugin?.owner === "upstream") found.push(`the "${PLUGIN_ID}" plugin in ${state.paths.registry}`);
  if (state.blocks.some((b) => b.owner === "upstream")) found.push(`its block in ${state.paths.config}`);
  if (state.upstreamHooks.length) found.push(`its [[hooks]] in ${state.paths.config}`);
  if (state.mcpOwner === "upstream") found.push(`its "openviking" server in ${state.paths.mcp}`);
  return `OpenViking's own Kimi Code plugin is registered (${
    found.join(", ")
  }). With both, every turn would be ` +
    "captured twice. Either remove it first — in Kimi run `/plugins remove openviking-memory`, or run OpenViking's " +
    "`install.sh --harness kimicode --uninstall --yes` — and run install again, or run install again with --yes " +
    "to let openviking-kimi take its place (its plugin is disabled or replaced, its block and MCP entry replaced).";
}

/** Plans the shared part: the connection settings given on the command line, saved to ovcli.conf. */
async function planCredentials(ctx: Context, creds: CredentialArgs, plan: Plan): Promise<string | undefined> {
  const path = credentialFilePaths(ctx.env).cli;
  const read = await readText(path);
  if (!read.ok) return read.error;
  const before = read.text;
  const ov = planOvcli(before, creds, path);
  if (!ov.ok) return ov.error;
  if (!ov.changed) return undefined;
  const change: FileChange = { path, before, after: ov.after, backup: "timestamped", display: maskSecrets };
  plan.changes.push(change);
  const ownDir = dirName(path) === openVikingHome(ctx.env);
  const step = fileStep(
    change,
    "connection settings",
    plan.now,
    ownDir ? () => makeDirs(dirName(path), { private: true }) : undefined,
  );
  plan.steps.push({
    ...step,
    describe: `${before === undefined ? "create" : "update"} ${path}: ${ov.steps.join(", ")}`,
    run: async () => ({
      ...(await step.run()),
      message: `connection settings saved to ${path}: ${ov.summary.join(", ")}`,
    }),
  });
  return undefined;
}

/**
 * After an install, whether the server answers: if not, where to start (README's "No server yet?"). The key
 * is doctor's to check (a search), this only asks `/health`.
 */
async function serverNote(ctx: Context): Promise<boolean> {
  const { config } = await loadConfig(ctx.env);
  const checks = await serverChecks(config, ctx.fetch, { healthOnly: true });
  const say = (text: string) => ctx.out.info(String(scrub(text, [config.apiKey])));
  const failed = checks.find((c) => c.status === "fail");
  if (!failed) {
    say(`Server: ${checks.map((c) => c.summary).join("; ")}.`);
    return true;
  }
  say(`Note: ${failed.summary}.`);
  if (failed.fix) say(`  fix: ${failed.fix}`);
  return false;
}

/** Installs in `mode` and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const mode = options.mode ?? "config";
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return fail(ctx.out, "install", state.unreadable[0]);
  if (!state.homeExists) {
    ctx.out.info(
      `Kimi Code home ${home} does not exist yet; it ${options.dryRun ? "would" : "will"} be created (is ` +
        "Kimi Code installed? `npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  if (hasUpstream(state) && !options.yes) return fail(ctx.out, "install", upstreamMessage(state));
  if (mode === "plugin" && ctx.self.kind !== "compiled" && ctx.os === "windows") {
    return fail(
      ctx.out,
      "install",
      "plugin mode from a source checkout needs a POSIX shell for its launcher; on Windows use a " +
        "release binary (openviking-kimi.exe install --mode plugin) or --mode config.",
    );
  }
  const plan = newPlan(ctx.now);
  const credentials = await planCredentials(ctx, options.credentials, plan);
  if (credentials) return fail(ctx.out, "install", credentials);
  const program = await planProgram(ctx, mode, home, plan);
  if (typeof program === "string") return fail(ctx.out, "install", program);
  const problem = mode === "config"
    ? await planConfigMode(options, ctx, state, program, plan)
    : await planPluginMode(ctx, options, state, program, plan);
  if (problem) return fail(ctx.out, "install", problem);
  if (program.note) plan.notes.push(program.note);
  const sweep = plan.steps.length
    ? await sweepStep(ctx.env, { keep: program.keep, kimiHome: home })
    : undefined;
  if (sweep) plan.steps.push(sweep);
  const code = await carryOut(plan, ctx.out, {
    command: "install",
    dryRun: options.dryRun,
    start: `Installing openviking-kimi into ${home} (${mode} mode)`,
    done: () =>
      `Start a new Kimi Code session (or /reload) to load it; \`${
        commandName(ctx.env)
      } doctor\` checks the setup.`,
    nothing: `openviking-kimi is installed in ${home} (${mode} mode) just as this install would leave it.`,
  });
  if (code !== 0 || options.dryRun) return code;
  // One look at the server: the profile is fetched for the plugin's system prompt only when it answers.
  const answers = await serverNote(ctx);
  if (mode === "plugin") {
    await refreshInstalledPrompt(ctx, joinPath(state.paths.managedDir, PLUGIN_ID), answers);
  }
  return code;
}
