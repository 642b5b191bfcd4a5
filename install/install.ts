/**
 * `openviking-kimi install`: the connection settings (ovcli.conf), the program the registrations run
 * (program.ts), then the mode's registrations (kimi-home.ts), each mode taking the other out — one plan that
 * transaction.ts checks and carries out all or nothing. Once installed, it asks whether the server answers.
 */
import { credentialFilePaths, DEFAULT_BASE_URL, loadConfig, originOf } from "../openviking/config.ts";
import { asSentence } from "../openviking/advice.ts";
import { dirName, joinPath, openVikingHome } from "../lib/paths.ts";
import { scrub } from "../lib/scrub.ts";
import { commandName } from "../lib/self.ts";
import { PLUGIN_ID } from "./spec.ts";
import { type CredentialArgs, keptCopies, maskSecrets, planOvcli, savedConnection } from "./ovcli.ts";
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
 * The key to save: a key given is asked of the server first (user-key.ts: a root key becomes a user key, a
 * refused one stops install); with none given, the saved one stays for its own address (said) and a new
 * address gets none.
 */
async function keyOf(
  ctx: Context,
  creds: CredentialArgs,
  saved: { url: string; apiKey: string },
  options: InstallOptions,
  plan: Plan,
): Promise<CredentialArgs | string> {
  const url = creds.url === undefined ? saved.url : creds.url.trim().replace(/\/+$/, "") || DEFAULT_BASE_URL;
  if (!creds.apiKey) {
    if (creds.apiKey === undefined && saved.apiKey && originOf(url) === originOf(saved.url)) {
      plan.notes.push(
        `API key: the one saved for ${originOf(url)} is kept (to change it: --api-key-stdin).`,
      );
    }
    return creds;
  }
  const key = await keyToSave(ctx, { apiKey: creds.apiKey, from: creds.apiKeyFrom ?? "" }, {
    url,
    account: creds.account,
    user: creds.user,
    dryRun: options.dryRun,
  });
  if (!key.ok) return key.error;
  for (const line of key.said) ctx.out.info(line);
  return { ...creds, apiKey: key.apiKey, apiKeyFrom: key.from };
}

/**
 * Plans the shared part: the connection settings given on the command line, saved to ovcli.conf without a
 * backup (it holds the key); once written, the copies earlier installs kept of it (each with the key it
 * replaced) are removed.
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
  const valid = planOvcli(before, options.credentials, path, saved.url);
  if (!valid.ok) return valid.error;
  const creds = await keyOf(ctx, options.credentials, saved, options, plan);
  if (typeof creds === "string") return creds;
  const ov = planOvcli(before, creds, path, saved.url);
  if (!ov.ok) return ov.error;
  if (!ov.changed) return undefined;
  const change: FileChange = {
    path,
    before,
    after: ov.after,
    backup: "none",
    display: maskSecrets,
    secret: true,
  };
  plan.changes.push(change);
  const step = fileStep(change, "connection settings");
  const copies = await keptCopies(path);
  const removing = copies.length
    ? `; remove the ${copies.length} copies of it earlier installs kept (ovcli.conf.bak.<time>), with the keys they replaced`
    : "";
  plan.steps.push({
    ...step,
    describe: `${before === undefined ? "create" : "update"} ${path}: ${ov.steps.join(", ")}${removing}`,
    run: async () => {
      const done = await step.run();
      return {
        ...done,
        message: `connection settings saved to ${path}: ${ov.summary.join(", ")}`,
        commit: async () => {
          await done.commit?.();
          const gone = [];
          for (const copy of copies) {
            if (await Deno.remove(copy).then(() => true, () => false)) gone.push(copy);
          }
          return gone.length
            ? [
              `removed ${
                gone.join(", ")
              }: copies of ovcli.conf earlier installs kept, with the keys they replaced`,
            ]
            : [];
        },
      };
    },
  });
  return undefined;
}

/**
 * After an install, whether the server answers: if not, where to start (README's "No server yet?"). The key
 * is doctor's to check (a search), this only asks `/health`.
 */
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
  const credentials = await planCredentials(ctx, options, plan);
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
  const made = plan.steps.length
    ? await madeDirsStep(ctx.env, [
      home,
      dirName(pathCommand(ctx.env, ctx.os) ?? home),
      openVikingHome(ctx.env),
    ])
    : undefined;
  if (made) plan.steps.unshift(made);
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
