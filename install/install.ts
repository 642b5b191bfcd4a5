/**
 * `install` and `uninstall [--purge]`: the plugin directory under `plugins/managed` and its registry record, an
 * older config-mode registration (block, `mcp.json` entry, skill) taken out, and what a purge removes of the
 * home and, at the last, of what every home shares.
 */

import { serverChecks } from "./check.ts";
import { kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import {
  findRecord,
  parseJson,
  parseRegistry,
  planMcpUninstall,
  planRegistryInstall,
  planRegistryUninstall,
} from "./json-files.ts";
import { keyChangeNote, purgeCommitStep } from "./purge-commits.ts";
import {
  classifyManifest,
  commandAt,
  commandLauncherPath,
  installedBinaryPath,
  manifestText,
  pathCommand,
  PLUGIN_ID,
  pluginMemoryFiles,
  sameBytes,
} from "./spec.ts";
import { keyRefusal, planOvcli, savedConnection } from "./ovcli.ts";
import {
  installedHomes,
  madeDirList,
  madeDirsFile,
  madeDirsStep,
  planProgram,
  type Program,
  recordStep,
  sweepStep,
  versionsDir,
  versionsLeftFor,
  versionsUsedBy,
} from "./program.ts";
import { planConfigUninstall } from "./toml-block.ts";
import {
  carryOut,
  checkCreatable,
  type Context,
  fail,
  type FileChange,
  fileStep,
  type InstallOptions,
  type Plan,
  planFile,
  readText,
  removalStep,
  swapStep,
  type TreeFile,
  writeTree,
} from "./transaction.ts";
import { readTextIfExists } from "../lib/fs.ts";
import {
  defaultLogPath,
  dirName,
  type Env,
  homesFile,
  hookStateDir,
  integrationDir,
  joinPath,
  ledgerDir,
  mcpToolCachePath,
  openVikingHome,
  orNoHome,
  pendingDir,
  sharedStateDir,
} from "../lib/paths.ts";
import { scrub } from "../lib/redact.ts";
import { commandName } from "../lib/self.ts";
import { OWNED_MARK, refreshPromptFile, SKILL_NAME, SYSTEM_PROMPT_TITLE } from "../memory/system-prompt.ts";
import { SYSTEM_PROMPT_FILE } from "../memory/system-prompt.ts";
import { asSentence } from "../openviking/advice.ts";
import { breakerFiles } from "../openviking/breaker.ts";
import { credentialFilePaths, DEFAULT_BASE_URL, loadConfig, originOf } from "../openviking/config.ts";
import {
  countWords,
  destinationFor,
  destinationOf,
  elsewhereOf,
  goesTo,
  QUEUE_SUBDIR,
  queueSummary,
  REJECTED_SUBDIR,
} from "../openviking/queue.ts";

const read = (path: string) => readTextIfExists(path).catch(() => undefined);
const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);
const entriesOf = (dir: string) =>
  Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
/** A path with `/` separators and no trailing one, to compare two that name one directory. */
const norm = (p: string) => p.replaceAll("\\", "/").replace(/\/+$/, "");
const pluginRoot = (state: KimiState) => joinPath(state.paths.managedDir, PLUGIN_ID);

function kimiFiles(state: KimiState) {
  const { config, mcp, registry } = state.paths;
  return {
    config: { path: config, text: state.configText, out: planConfigUninstall },
    mcp: { path: mcp, text: state.mcpText, out: planMcpUninstall },
    registry: { path: registry, text: state.registryText, out: planRegistryUninstall },
  };
}
type KimiFile = keyof ReturnType<typeof kimiFiles>;

/** Whether registry `text` holds the record install writes (rooted in Kimi's managed place), not just our id. */
function installsRecord(state: KimiState, text: string | undefined): boolean {
  const registry = parseRegistry(text);
  const root = registry.ok ? findRecord(registry.value)?.root : undefined;
  return root !== undefined && norm(root) === norm(pluginRoot(state));
}

/** Plans a change of one of Kimi's files, keeping a `.bak` unless all of it was ours (the registry: proven ours). */
function planKimiFile(plan: Plan, state: KimiState, file: KimiFile, after: string | undefined, what: string) {
  const { path, text, out } = kimiFiles(state)[file];
  const left = text === undefined ? undefined : out(text);
  const ours = left?.ok && left.changed && left.after === undefined &&
    (file !== "registry" || (state.plugin?.owner === "ours" && installsRecord(state, text)));
  planFile(plan, path, text, after, what, ours ? "none" : "bak");
}

/**
 * Plans config mode out: our block, `mcp.json` entry and memory skill (its directory with it, and `skills/` when
 * left empty and made by install); `switching`: to plugin mode, refusing our hooks outside the block.
 */
async function planConfigOut(env: Env, state: KimiState, plan: Plan, switching: boolean) {
  const cfg = planConfigUninstall(state.configText);
  if (!cfg.ok) return cfg.error;
  const mcp = planMcpUninstall(state.mcpText);
  if (!mcp.ok) return mcp.error;
  const strays = state.strayHooks.map((h) => `hooks[${h.index}]: ${h.command}`).join("; ");
  if (strays && switching) {
    return `config.toml has openviking-kimi [[hooks]] outside the marked block (${strays}); Kimi may have ` +
      "rewritten the file. Delete those [[hooks]] tables and run install again.";
  } else if (strays) {
    plan.notes.push(
      `Note: config.toml still has openviking-kimi [[hooks]] outside the marked block (${strays}); delete ` +
        "those [[hooks]] tables by hand.",
    );
  }
  if (cfg.changed) {
    const what = switching ? "config-mode hooks removed (switching to plugin mode)" : "hooks removed";
    planKimiFile(plan, state, "config", cfg.after, what);
  }
  if (mcp.changed) {
    const what = switching
      ? "config-mode MCP entry removed (the plugin declares it)"
      : 'MCP server "openviking" removed';
    planKimiFile(plan, state, "mcp", mcp.after, what);
  }
  plan.notes.push(...[...cfg.warnings, ...mcp.warnings].map((w) => `Note: ${w}`));
  const path = joinPath(state.paths.home, "skills", SKILL_NAME, "SKILL.md");
  if (!(await read(path))?.includes(OWNED_MARK)) return undefined;
  const dir = dirName(path);
  const target = (await entriesOf(dir)).length === 1 ? dir : path;
  plan.steps.push(
    removalStep(target, `delete ${target} (the memory skill)`, `memory skill removed: ${target}`),
  );
  const skills = dirName(dir);
  if (
    target !== dir || (await entriesOf(skills)).length !== 1 || !(await madeDirList(env)).includes(skills)
  ) {
    return undefined;
  }
  plan.steps.push({
    describe: `delete ${skills} (left empty)`,
    removes: skills,
    run: () => Promise.resolve({ commit: () => Deno.remove(skills).catch(() => {}) }),
  });
  return undefined;
}

/** Plans our plugin record out (the directory stays for `--purge`). */
function planPluginOut(state: KimiState, plan: Plan): string | undefined {
  const { plugin } = state;
  if (state.registryError && state.registryText !== undefined) {
    plan.notes.push(`Note: ${state.registryError}`);
  } else if (plugin?.owner === "ours" || plugin?.owner === "missing") {
    const reg = planRegistryUninstall(state.registryText);
    if (!reg.ok) return reg.error;
    planKimiFile(plan, state, "registry", reg.after, `plugin "${PLUGIN_ID}" unregistered`);
  } else if (plugin?.owner === "upstream") {
    plan.notes.push(
      `Note: the "${PLUGIN_ID}" plugin registered in Kimi is OpenViking's own one; left in place.`,
    );
  }
  return undefined;
}

/** Whether the plugin directory holds `files` already, byte for byte and with their modes. */
async function pluginInPlace(root: string, files: TreeFile[]): Promise<boolean> {
  for (const f of files) {
    const path = joinPath(root, f.path);
    const mode = await Deno.stat(path).then((i) => i.mode, () => null);
    if (mode === null || (mode !== undefined && Deno.build.os !== "windows" && (mode & 0o777) !== f.mode)) {
      return false;
    }
    const same = typeof f.content === "object" && "copyFrom" in f.content
      ? await sameBytes(path, f.content.copyFrom)
      // The hooks rewrite the system prompt with the user's profile: it is in place when it is there.
      : await read(path).then((now) =>
        now !== undefined && (f.path === SYSTEM_PROMPT_FILE || now === f.content)
      );
    if (!same) return false;
  }
  return true;
}

async function planPluginMode(ctx: Context, state: KimiState, program: Program, plan: Plan) {
  if (state.registryError) return state.registryError;
  const leave = await planConfigOut(ctx.env, state, plan, true);
  if (leave) return leave;
  const root = pluginRoot(state);
  const manifest = joinPath(root, "kimi.plugin.json");
  const text = manifestText(ctx.os);
  const files = [
    { path: "kimi.plugin.json", content: text, mode: 0o600 },
    ...pluginMemoryFiles(),
    program.pluginBin,
  ];
  const placing = state.plugin?.owner !== "ours" || !(await pluginInPlace(root, files));
  if (placing) {
    const stamp = ctx.now.toISOString().replace(/[:.]/g, "-");
    const keepAs = state.plugin?.owner === "other" && (await exists(root))
      ? `${root}.replaced-${stamp}`
      : undefined;
    plan.steps.push(swapStep({
      describe: `place the plugin directory ${root} (kimi.plugin.json, ${program.pluginBin.path})`,
      path: root,
      make: (tmp) => writeTree(tmp, files),
      keepAs,
      message: `plugin directory in place: ${root}${
        keepAs ? ` (the one it replaced is kept in ${keepAs})` : ""
      }`,
      check: () => checkCreatable(root),
      // The manifest's diff, for dry runs (the step places the directory whole).
      change: { path: manifest, before: await read(manifest), after: text, backup: "bak", displayOnly: true },
    }));
  }
  const reg = planRegistryInstall(state.registryText, { root, originalSource: program.source }, ctx.now);
  if (!reg.ok) return reg.error;
  const p = reg.previous;
  // The same directory, registered the same way: only the record's updatedAt would change.
  if (placing || p?.root !== root || p.source !== "local-path" || p.originalSource !== program.source) {
    planKimiFile(plan, state, "registry", reg.after, `plugin "${PLUGIN_ID}" registered`);
  }
  if (p?.enabled === false) {
    plan.notes.push(`Note: the plugin is disabled in Kimi; enable it with \`/plugins enable ${PLUGIN_ID}\`.`);
  }
  // From a checkout, what the hooks run is the program copy its launcher is in.
  const copy = ctx.self.kind === "checkout" ? dirName(dirName(program.command)) : undefined;
  const deno = ctx.deno ?? Deno.execPath();
  plan.notes.push((p) =>
    `Hooks ${p ? "would run" : "run"}: ./${program.pluginBin.path} hook <event>, in ${root}` +
    (copy
      ? `: the program copy ${copy}, with ${deno}, not this checkout (moving or deleting the checkout ` +
        `${p ? "would change" : "changes"} nothing; run install again to update them)`
      : "")
  );
  return undefined;
}

async function refreshInstalledPrompt(ctx: Context, root: string, answers: boolean): Promise<void> {
  const file = joinPath(root, SYSTEM_PROMPT_FILE);
  const { config } = await loadConfig(ctx.env);
  const outcome = answers
    ? await refreshPromptFile(file, config, { force: true, now: ctx.now, budgetMs: 3000 })
    : "unreachable";
  const why = outcome === "unreachable" ? "OpenViking did not answer" : `refresh: ${outcome}`;
  ctx.out.info(
    outcome === "written"
      ? `  ✓ the user's profile is in the plugin's system prompt: ${file}`
      : `Note: the plugin's system prompt has no profile yet (${why}); the next Kimi session start fills it in.`,
  );
}

function upstreamProblem({ plugin, paths, blocks, upstreamHooks, mcpOwner }: KimiState): string | undefined {
  const found = [
    plugin?.owner === "upstream" && plugin.enabled && `the "${PLUGIN_ID}" plugin in ${paths.registry}`,
    blocks.some((b) => b.owner === "upstream") && `its block in ${paths.config}`,
    upstreamHooks.length > 0 && `its [[hooks]] in ${paths.config}`,
    mcpOwner === "upstream" && `its "openviking" server in ${paths.mcp}`,
  ].filter((f) => typeof f === "string");
  if (!found.length) return undefined;
  return `OpenViking's own Kimi Code plugin is registered (${
    found.join(", ")
  }). With both, every turn would be ` +
    "captured twice. Remove it first — in Kimi run `/plugins remove openviking-memory`, or run OpenViking's " +
    "`install.sh --harness kimicode --uninstall --yes` — and run install again.";
}

/**
 * Plans the settings given into ovcli.conf (the file replaced kept as its `.bak`), a key asked of the server
 * first; the saved key stays for its own address. Why not (with its exit code), else undefined.
 */
async function planCredentials(
  ctx: Context,
  options: InstallOptions,
  home: string,
  plan: Plan,
): Promise<{ error: string; code: number } | undefined> {
  const path = credentialFilePaths(ctx.env).cli;
  const read = await readText(path);
  if (!read.ok) return { error: read.error, code: 1 };
  const before = read.text;
  const saved = await savedConnection(ctx.env);
  const creds = options.credentials;
  const ov = planOvcli(before, creds, path, saved.url);
  if (!ov.ok) return { error: ov.error, code: 1 };
  const url = creds.url === undefined ? saved.url : creds.url.trim().replace(/\/+$/, "") || DEFAULT_BASE_URL;
  if (creds.apiKey) {
    const refused = await keyRefusal(ctx, creds.apiKey, { ...creds, url });
    if (refused) return refused;
  } else if (creds.apiKey === undefined && saved.apiKey && originOf(url) === originOf(saved.url)) {
    plan.notes.push(`API key: the one saved for ${originOf(url)} is kept (to change it: --api-key-stdin).`);
  }
  if (!ov.changed) return undefined;
  const moved = await installedHomes(ctx.env, home);
  if (url !== saved.url) {
    // Every home reads the one ovcli.conf: the new address is theirs too.
    const verb = (p: boolean) => p ? "would then use" : "now uses";
    if (moved.length) {
      plan.notes.push((p) =>
        `Note: ${moved.map((h) => `the Kimi home ${h} shares ${path}: it ${verb(p)} ${url} too`).join("; ")}.`
      );
    }
    // Writes queued for another address wait for it: say so, and how they go there.
    const there = destinationOf({ baseUrl: url });
    const queued = await queueSummary(pendingDir(ctx.env)).catch(() => undefined);
    const away = elsewhereOf(queued?.sessions.filter((q) => q.to && q.to.url !== there.url) ?? [], there);
    if (away) plan.notes.push(`Note: ${away.summary}: ${away.fix}.`);
  }
  if (creds.apiKey && saved.apiKey && creds.apiKey !== saved.apiKey && url === saved.url) {
    const { config } = await loadConfig(ctx.env, ctx.cwd);
    const note = await keyChangeNote(ctx.env, { ...config, baseUrl: url }, saved.apiKey, creds.apiKey);
    if (note) plan.notes.push(note);
  }
  const change: FileChange = { path, before, after: ov.after, backup: "bak", secret: true };
  const kept = before === undefined ? "" : ` (the previous file kept as ${path}.bak)`;
  const step = fileStep(change, "connection settings", {
    describe: `${before === undefined ? "create" : "update"} ${path}: ${ov.steps.join(", ")}${kept}`,
    message: `connection settings saved to ${path}${kept}: ${ov.summary.join(", ")}`,
  });
  plan.steps.push({ ...step, change });
  return undefined;
}

async function serverNote(ctx: Context): Promise<boolean> {
  const { config } = await loadConfig(ctx.env);
  const checks = await serverChecks(config, ctx.fetch, { quick: true, env: ctx.env });
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

/** Installs the plugin and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const refuse = (message: string) => fail(ctx.out, "install", message);
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return refuse(state.unreadable[0]);
  if (!state.homeExists) {
    ctx.out.info(
      `Kimi Code home ${home} does not exist yet; it ${options.dryRun ? "would" : "will"} be created (is ` +
        "Kimi Code installed? `npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  const upstream = upstreamProblem(state);
  if (upstream) return refuse(upstream);
  if (ctx.self.kind !== "compiled" && ctx.os === "windows") {
    return refuse(
      "on Windows, install from the release binary (openviking-kimi-x86_64-pc-windows-msvc.exe or " +
        "openviking-kimi-aarch64-pc-windows-msvc.exe install): a source checkout installs on Linux and macOS only.",
    );
  }
  const plan: Plan = { steps: [], notes: [] };
  const credentials = await planCredentials(ctx, options, home, plan);
  if (credentials) return fail(ctx.out, "install", credentials.error, credentials.code);
  const program = await planProgram(ctx, home, plan);
  if (typeof program === "string") return refuse(program);
  const problem = await planPluginMode(ctx, state, program, plan);
  if (problem) return refuse(problem);
  if (plan.steps.length) {
    const sweep = await sweepStep(ctx.env, { keep: program.keep, kimiHome: home });
    if (sweep) plan.steps.push(sweep);
    const dirs = [home, dirName(pathCommand(ctx.env, ctx.os) ?? home), openVikingHome(ctx.env)];
    const made = await madeDirsStep(ctx.env, [...dirs, state.paths.managedDir]);
    if (made) plan.steps.unshift(made);
  }
  const code = await carryOut(plan, ctx.out, {
    command: "install",
    dryRun: options.dryRun,
    start: `Installing openviking-kimi into ${home} (plugin mode)`,
    done: () =>
      `Start a new Kimi Code session (or /reload) to load it; \`${
        commandName(ctx.env)
      } doctor\` checks the setup.`,
    nothing: `openviking-kimi is installed in ${home} (plugin mode) just as this install would leave it.`,
  });
  if (code !== 0 || options.dryRun) return code;
  // One look at the server: the profile is fetched for the plugin's system prompt only when it answers.
  const answers = await serverNote(ctx);
  await refreshInstalledPrompt(ctx, pluginRoot(state), answers);
  return code;
}

/** The log and queues `--purge` deletes (the log in its default place; a queue only when empty: `notes` say why). */
async function purgeableData(ctx: Context, notes: Plan["notes"]): Promise<string[]> {
  const out = [defaultLogPath(ctx.env)];
  const { config } = await loadConfig(ctx.env, ctx.cwd);
  const cmd = commandName(ctx.env); // what runs once installed again
  const here = await destinationFor(config);
  const queues = [
    [
      QUEUE_SUBDIR,
      "queued write(s)",
      " not yet delivered",
      `Install again and the next session start replays them (or run "${cmd} replay")`,
    ],
    [
      REJECTED_SUBDIR,
      "write(s) OpenViking refused",
      "",
      `Once the server takes them, install again and run "${cmd} replay --rejected"`,
    ],
  ];
  for (const [sub, what, state, then] of queues) {
    const dir = joinPath(pendingDir(ctx.env), sub);
    const waiting = await queueSummary(pendingDir(ctx.env), sub).catch(() => undefined);
    if (waiting?.entries === 0) out.push(dir);
    if (!waiting?.entries) continue;
    const sum = (k: "messages" | "commits") => waiting.sessions.reduce((n, x) => n + x[k], 0);
    const counted = { messages: sum("messages"), commits: sum("commits"), sessions: waiting.sessions.length };
    // Writes queued for another server or identity go only there: say where, and the command that sends them.
    const away = sub === QUEUE_SUBDIR ? waiting.sessions.filter((x) => !goesTo(x.to, here)) : [];
    const elsewhere = sub === QUEUE_SUBDIR ? elsewhereOf(waiting.sessions, here, cmd) : undefined;
    const home = waiting.sessions.length - away.length;
    const next = !elsewhere
      ? then
      : `${
        home
          ? `${waiting.entries - away.reduce((n, x) => n + x.entries, 0)} of them (${home} session(s)) ` +
            `the next session start replays once you install again (or run "${cmd} replay"); `
          : ""
      }${elsewhere.summary}: install again, then ${elsewhere.fix}`;
    notes.push(
      `Kept: ${waiting.entries} ${what} (${
        countWords(counted)
      })${state}, in ${dir}. ${next}; to drop them, ` +
        "delete that directory.",
    );
  }
  return out;
}

/** Plans deleting the home's `.bak` copies that hold nothing but what the file holds after the run (and our part). */
async function planBackupsClean(state: KimiState, plan: Plan): Promise<void> {
  for (const [kind, { path, text: now, out }] of Object.entries(kimiFiles(state))) {
    const change = plan.steps.find((s) => s.change?.path === path)?.change;
    const mine = (t: string | undefined) => kind !== "registry" || installsRecord(state, t);
    if (change && mine(now)) change.backup = "none";
    const text = await read(`${path}.bak`);
    const file = change ? change.after : now;
    const cleaned = text === undefined ? undefined : out(text);
    const ours = cleaned?.ok && cleaned.changed && mine(text);
    if (text === undefined || file === undefined || (ours ? cleaned.after : text) !== file) continue;
    const what = ours
      ? "nothing in it but our part and what the file holds"
      : "it holds just what the file holds";
    planFile(plan, `${path}.bak`, text, undefined, `backup deleted (${what})`, "none");
  }
}

async function ourCommand(ctx: Context): Promise<string | undefined> {
  const command = pathCommand(ctx.env, ctx.os);
  return command && (await commandAt(command, ctx.env)).kind === "ours" ? command : undefined;
}

/** What every installed home shares and is there: executable, state, ledger, log, queue, caches, breakers, command. */
async function sharedTargets(ctx: Context, notes: Plan["notes"]): Promise<string[]> {
  const command = await ourCommand(ctx);
  const state = (name: string) => joinPath(sharedStateDir(ctx.env), name);
  const targets = [
    dirName(installedBinaryPath(ctx.env, ctx.os)),
    dirName(commandLauncherPath(ctx.env)),
    hookStateDir(ctx.env),
    ledgerDir(ctx.env),
    ...await purgeableData(ctx, notes),
    mcpToolCachePath(ctx.env),
    ...await breakerFiles(orNoHome(() => sharedStateDir(ctx.env)) ?? ""),
    // Session start's stamp, the extraction alarm and what each workspace's commits made.
    ...["kimicode-housekeeping.json", "kimicode-extraction-alarm.json", "kimicode-made.json"].map(state),
    ...(command ? [command] : []),
  ];
  const there = await Promise.all(targets.map(exists));
  return targets.filter((_, i) => there[i]);
}

/** Plans `--purge`: the plugin directory, `.bak` copies, unused versions, and the shared part unless another home needs it. */
async function planPurge(
  ctx: Context,
  state: KimiState,
  yes: boolean,
  plan: Plan,
) {
  const targets: string[] = [];
  const managed = pluginRoot(state);
  if (state.plugin?.owner !== "upstream" && state.plugin?.owner !== "other") {
    // Ours by the rule detect and doctor use (its hooks run bin/openviking-kimi), or no manifest left at all.
    const text = await read(joinPath(managed, "kimi.plugin.json"));
    const manifest = text === undefined ? undefined : parseJson(text);
    const ours = !manifest || (manifest.ok && classifyManifest(manifest.value) === "ours");
    if (ours && await exists(managed)) targets.push(managed);
  }
  await planBackupsClean(state, plan);
  const others = await installedHomes(ctx.env, state.paths.home);
  // Another home keeps the shared part whole (said below): what a last purge would leave is no news then.
  const shared = await sharedTargets(ctx, others.length ? [] : plan.notes);
  const meanwhile: string[] = [];
  if (others.length === 0) {
    // The hook state goes: the commits it owes are queued first.
    const idle = await purgeCommitStep(ctx, plan, yes);
    if (typeof idle === "string") return idle;
    if (idle) {
      plan.steps.push(idle);
      // A capture still running (the step waits for it) may make the hook state or ledger meanwhile.
      meanwhile.push(...[hookStateDir(ctx.env), ledgerDir(ctx.env)].filter((t) => !shared.includes(t)));
    }
    targets.push(...shared, ...meanwhile);
  } else {
    const kept = [...await versionsUsedBy(ctx.env, others), ...shared];
    if (kept.length) plan.notes.push(keptForOthers(others, kept));
  }
  for (const t of targets) {
    const step = removalStep(t, `delete ${t}`, `removed ${t}`);
    const run = step.run;
    // The purge queues commits there (install/purge-commits.ts): such a queue stays.
    const sub = [QUEUE_SUBDIR, REJECTED_SUBDIR].find((s) => joinPath(pendingDir(ctx.env), s) === t);
    if (sub) step.run = async () => (await queueSummary(pendingDir(ctx.env), sub)).entries ? {} : await run();
    if (meanwhile.includes(t)) step.run = async () => await exists(t) ? await run() : {};
    plan.steps.push(step);
  }
  const sweep = await sweepStep(ctx.env, { kimiHome: state.paths.home, purge: true });
  if (sweep) plan.steps.push(sweep);
  const left = others.length ? [] : await versionsLeftFor(ctx.env, state.paths.home);
  const kept = [...left, ...await keptShared(ctx)];
  if (kept.length) plan.notes.push(`Kept: ${kept.join(" and ")}.`);
  const homes = homesFile(ctx.env);
  const forget = await recordStep(
    homes,
    (lines) => lines.filter((l) => others.length !== 0 && l !== state.paths.home),
    others.length ? `take ${state.paths.home} out of ${homes}` : `delete ${homes}`,
  );
  if (forget) plan.steps.push(forget);
  if (plan.steps.length) await planLeftEmpty(ctx.env, state, others.length === 0, plan, left.length > 0);
  return undefined;
}

/**
 * Plans removing the directories this purge leaves empty, deepest first: only those install recorded making
 * (the home's own at once, the rest at the last purge, `last`), and ours in `~/.openviking` at the last.
 */
async function planLeftEmpty(env: Env, state: KimiState, last: boolean, plan: Plan, versionsStay: boolean) {
  const made = await madeDirList(env);
  const own = [state.paths.managedDir, dirName(state.paths.managedDir)].filter((d) => made.includes(d));
  const record = madeDirsFile(env);
  const forget = await recordStep(
    record,
    (lines) => lines.filter((l) => !own.includes(l)),
    `take ${own.join(", ")} out of ${record}`,
  );
  if (forget) plan.steps.push(forget);
  const integration = integrationDir(env);
  const ours = last
    ? [
      ...[ledgerDir(env), hookStateDir(env), defaultLogPath(env)].map(dirName),
      ...[pendingDir(env), sharedStateDir(env), versionsDir(env), integration, dirName(integration), ...made],
    ]
    : [];
  // What the run removes (the sweep takes every version once no home needs them).
  const gone = new Set(plan.steps.flatMap((s) => s.removes ? [s.removes] : []));
  if (last) gone.add(record);
  const there: string[] = [];
  for (const dir of [...new Set([...own, ...ours])].sort((a, b) => b.length - a.length)) {
    const entries = await Array.fromAsync(Deno.readDir(dir), (e) => joinPath(dir, e.name)).catch(() =>
      undefined
    );
    const emptied = entries?.every((e) => gone.has(e) || (last && !versionsStay && dir === versionsDir(env)));
    if (gone.has(dir) || !emptied) continue;
    there.push(dir);
    gone.add(dir);
  }
  if (!there.length) return;
  // At the end, once what was in them is gone (the sweep keeps the copies still in use).
  const commit = async () => {
    const removed = [];
    for (const dir of there) {
      // The record goes with its directory once the sweep left no version (a later purge needs it).
      if (dir === integration && !(await exists(versionsDir(env)))) await Deno.remove(record).catch(() => {});
      if (await Deno.remove(dir).then(() => true, () => false)) removed.push(dir);
    }
    return { done: removed.length ? [`directories left empty removed: ${removed.join(", ")}`] : [] };
  };
  plan.steps.push({
    describe: `delete the directories left empty (${there.join(", ")})`,
    run: () => Promise.resolve({ commit }),
  });
}

async function keptShared(ctx: Context): Promise<string[]> {
  const ovcli = credentialFilePaths(ctx.env).cli;
  const pending = pendingDir(ctx.env);
  const others = (await entriesOf(pending)).some((n) => n !== QUEUE_SUBDIR && n !== REJECTED_SUBDIR);
  return [
    ...(await exists(ovcli) ? [ovcli] : []),
    ...(others ? [`the queue files of OpenViking's other clients in ${pending}`] : []),
  ];
}

/** The note naming what is kept because Kimi homes other than this one still have openviking-kimi. */
const keptForOthers = (others: string[], kept: string[]) =>
  `Kept for the Kimi home${others.length > 1 ? "s" : ""} still installed (${others.join(", ")}): ${
    kept.join(", ")
  }; purging the last one removes them.`;

/** What a plain uninstall leaves for `--purge`, in words (what other installed homes share named as kept). */
async function keptFiles(ctx: Context, state: KimiState): Promise<string | undefined> {
  const [binary, versions, command] = [
    installedBinaryPath(ctx.env, ctx.os),
    versionsDir(ctx.env),
    await ourCommand(ctx),
  ];
  const shared = [
    ...(await exists(binary) ? [`the executable ${binary}`] : []),
    ...(await exists(versions) ? [`the program copies in ${versions}`] : []),
    ...(command ? [`the command ${command}`] : []),
  ];
  const others = await installedHomes(ctx.env, state.paths.home);
  const kept = others.length ? [] : shared;
  const managed = pluginRoot(state);
  if (state.plugin?.owner === "ours" && (await exists(managed))) {
    kept.push(`the plugin directory ${managed}`);
  }
  const lines = [
    ...(kept.length ? [`Files kept (remove them with --purge): ${kept.join(", ")}.`] : []),
    ...(others.length && shared.length ? [keptForOthers(others, shared)] : []),
  ];
  return lines.length ? lines.join("\n") : undefined;
}

/** Uninstalls and returns the exit code. */
export async function runUninstall(ctx: Context, options: InstallOptions): Promise<number> {
  const { out } = ctx;
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return fail(out, "uninstall", state.unreadable[0]);
  const plan: Plan = { steps: [], notes: [] };
  const problem = (await planConfigOut(ctx.env, state, plan, false)) ?? planPluginOut(state, plan);
  if (problem) return fail(out, "uninstall", problem);
  const prompt = joinPath(pluginRoot(state), SYSTEM_PROMPT_FILE);
  if ((await read(prompt))?.startsWith(SYSTEM_PROMPT_TITLE)) {
    const describe = `delete ${prompt} (the profile in the plugin's system prompt)`;
    plan.steps.push(removalStep(prompt, describe, `system prompt removed: ${prompt}`));
  }
  const refused = options.purge ? await planPurge(ctx, state, options.yes, plan) : undefined;
  if (refused) return fail(out, "uninstall", refused);
  return await carryOut(plan, out, {
    command: "uninstall",
    dryRun: options.dryRun,
    start: `Removing openviking-kimi from ${home}`,
    done: options.purge ? undefined : await keptFiles(ctx, state),
    nothing: `nothing of openviking-kimi is registered in ${home}.`,
  });
}
