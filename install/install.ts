/**
 * `openviking-kimi install`: the connection settings (ovcli.conf), the program the registrations run
 * (program.ts), the mode's registrations (kimi-home.ts) — one plan, carried out all or nothing.
 */
import { credentialFilePaths, DEFAULT_BASE_URL, loadConfig, originOf } from "../openviking/config.ts";
import { asSentence } from "../openviking/advice.ts";
import { dirName, joinPath, openVikingHome } from "../lib/paths.ts";
import { scrub } from "../lib/scrub.ts";
import { commandName } from "../lib/self.ts";
import { PLUGIN_ID } from "./spec.ts";
import { type CredentialArgs, keptCopies, planOvcli, savedConnection } from "./ovcli.ts";
import { keyToSave } from "./user-key.ts";
import { hasUpstream, kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import {
  carryOut,
  type Context,
  fail,
  type FileChange,
  fileStep,
  type InstallOptions,
  newPlan,
  type Plan,
  readText,
} from "./transaction.ts";
import { madeDirsStep, planProgram, sweepStep } from "./program.ts";
import { pathCommand } from "./placement.ts";
import { serverChecks } from "./check.ts";
import { planConfigMode, planPluginMode, refreshInstalledPrompt } from "./kimi-home.ts";

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

/**
 * Plans the connection settings given into ovcli.conf, without a backup (it holds the key). A key given is
 * asked of the server first (user-key.ts: a root key becomes a user key, a refused one stops install); with
 * none given, the saved one stays for its own address (said). Once written, the `ovcli.conf.bak.<time>`
 * copies earlier installs kept (each with the key it replaced) go.
 */
async function planCredentials(
  ctx: Context,
  options: InstallOptions,
  plan: Plan,
): Promise<string | undefined> {
  const path = credentialFilePaths(ctx.env).cli;
  const read = await readText(path);
  if (!read.ok) return read.error;
  const before = read.text;
  const saved = await savedConnection(ctx.env);
  let creds = options.credentials;
  const valid = planOvcli(before, creds, path, saved.url);
  if (!valid.ok) return valid.error;
  const url = creds.url === undefined ? saved.url : creds.url.trim().replace(/\/+$/, "") || DEFAULT_BASE_URL;
  if (creds.apiKey) {
    const given = { apiKey: creds.apiKey, from: creds.apiKeyFrom ?? "" };
    const key = await keyToSave(ctx, given, { ...creds, url, dryRun: options.dryRun });
    if (!key.ok) return key.error;
    for (const line of key.said) ctx.out.info(line);
    creds = { ...creds, apiKey: key.apiKey, apiKeyFrom: key.from };
  } else if (creds.apiKey === undefined && saved.apiKey && originOf(url) === originOf(saved.url)) {
    plan.notes.push(`API key: the one saved for ${originOf(url)} is kept (to change it: --api-key-stdin).`);
  }
  const ov = planOvcli(before, creds, path, saved.url);
  if (!ov.ok) return ov.error;
  if (!ov.changed) return undefined;
  const change: FileChange = { path, before, after: ov.after, backup: "none", secret: true };
  plan.changes.push(change);
  const step = fileStep(change, "connection settings");
  const copies = await keptCopies(path);
  const kept = "earlier installs kept (ovcli.conf.bak.<time>), with the keys they replaced";
  const removing = copies.length ? `; remove the ${copies.length} copies of it ${kept}` : "";
  plan.steps.push({
    describe: `${before === undefined ? "create" : "update"} ${path}: ${ov.steps.join(", ")}${removing}`,
    run: async () => {
      const done = await step.run();
      const commit = async () => {
        await done.commit?.();
        const gone = [];
        for (const copy of copies) if (await Deno.remove(copy).then(() => true, () => false)) gone.push(copy);
        return gone.length
          ? [`removed ${gone.join(", ")}: copies of ovcli.conf ${kept.replace(/ \(.*\)/, "")}`]
          : [];
      };
      return { ...done, message: `connection settings saved to ${path}: ${ov.summary.join(", ")}`, commit };
    },
  });
  return undefined;
}

/** After an install, whether the server answers (`/health`, and memory's routes take the key); if not, the fix. */
async function serverNote(ctx: Context): Promise<boolean> {
  const { config } = await loadConfig(ctx.env);
  const checks = await serverChecks(config, ctx.fetch, { quick: true });
  const say = (text: string) => ctx.out.info(String(scrub(text, [config.apiKey])));
  const failed = checks.find((c) => c.status === "fail");
  if (!failed) {
    say(`Server: ${checks.map((c) => c.summary).join("; ")}.`);
    return true;
  }
  say(`Note: ${asSentence(failed.summary)}`);
  if (failed.fix) say(`  fix: ${failed.fix}`);
  return false;
}

/** Installs in `mode` and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const refuse = (message: string) => fail(ctx.out, "install", message);
  const mode = options.mode ?? "config";
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return refuse(state.unreadable[0]);
  if (!state.homeExists) {
    ctx.out.info(
      `Kimi Code home ${home} does not exist yet; it ${options.dryRun ? "would" : "will"} be created (is ` +
        "Kimi Code installed? `npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  if (hasUpstream(state) && !options.yes) return refuse(upstreamMessage(state));
  if (mode === "plugin" && ctx.self.kind !== "compiled" && ctx.os === "windows") {
    return refuse(
      "plugin mode from a source checkout needs a POSIX shell for its launcher; on Windows use a " +
        "release binary (openviking-kimi.exe install --mode plugin) or --mode config.",
    );
  }
  const plan = newPlan();
  const credentials = await planCredentials(ctx, options, plan);
  if (credentials) return refuse(credentials);
  const program = await planProgram(ctx, mode, home, plan);
  if (typeof program === "string") return refuse(program);
  const problem = mode === "config"
    ? await planConfigMode(options, ctx, state, program, plan)
    : await planPluginMode(ctx, options, state, program, plan);
  if (problem) return refuse(problem);
  if (program.note) plan.notes.push(program.note);
  if (plan.steps.length) {
    const sweep = await sweepStep(ctx.env, { keep: program.keep, kimiHome: home });
    if (sweep) plan.steps.push(sweep);
    const dirs = [home, dirName(pathCommand(ctx.env, ctx.os) ?? home), openVikingHome(ctx.env)];
    const made = await madeDirsStep(ctx.env, dirs);
    if (made) plan.steps.unshift(made);
  }
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
