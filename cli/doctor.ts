/** `openviking-kimi doctor`: every check, each problem with its fix; exit 1 when one fails. Never prints a key. */

import { type Config, loadConfig } from "../openviking/config.ts";
import * as queues from "../openviking/queue.ts";
import { HOOKS } from "../kimi/hooks.ts";
import { SessionStateSchema } from "../memory/state.ts";
import { alarmWords, askAlarm } from "../memory/extraction.ts";
import { homeListed } from "../memory/dispatch.ts";
import { createClient } from "../openviking/client.ts";
import { type Check, checkOf, serverChecks } from "../install/check.ts";
import { kimiHomeFor, type KimiState, readKimiState } from "../install/detect.ts";
import { denoNotFound, findDeno, isExecutable, launcherInfo } from "../install/program.ts";
import {
  currentOs,
  isOurHookCommand,
  isUpstreamHookCommand,
  MCP_SERVER_NAME,
  type OsFamily,
  PLUGIN_ID,
} from "../install/spec.ts";
import { parseJsonOrUndefined, readTextIfExists, unwritableReason } from "../lib/fs.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { printable, reportJson } from "../lib/neutralize.ts";
import * as paths from "../lib/paths.ts";
import { scrub } from "../lib/redact.ts";
import { commandName, COPY_FILES, invocationCwd } from "../lib/self.ts";
import { VERSION } from "../lib/version.ts";
import { ago } from "../lib/columns.ts";
import {
  capturedWords,
  localSessions,
  pausedWords,
  type Places,
  placesStatus,
  queueWords,
  readable,
  readPlaces,
  rejectedWords,
  type Said,
} from "./status.ts";

/** What doctor looks at: the environment, Kimi's home ("" without one), the workspace, the OS, the time. */
export type DoctorContext = { env: paths.Env; home: string; cwd?: string; os: OsFamily; now: number };
type Part = Check[] | Promise<Check[]>;

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);
const isFile = (path: string) => Deno.stat(path).then((s) => s.isFile, () => false);
/** A command as the fixes name it: `` `openviking-kimi replay` `` as it runs in `env`. */
const runIn = (env: paths.Env) => (args: string) => `\`${commandName(env)} ${args}\``;
type Run = ReturnType<typeof runIn>;
const installFix = (run: Run) => `run ${run("install")}`;
const REINSTALL = "run install again: `deno task -q install` in an openviking-kimi checkout, or " +
  "`./openviking-kimi-<target> install` with a release binary";

/** Where each event is registered (config block, plugin, OpenViking's own plugin). */
export function registrations(state: KimiState): Map<string, string[]> {
  const byEvent = new Map<string, string[]>(HOOKS.map((h) => [h.event, []]));
  const add = (event: unknown, where: string) => typeof event === "string" && byEvent.get(event)?.push(where);
  if (state.configError === undefined && state.invalidHookKeys.length === 0) {
    for (const h of state.configHooks) {
      if (isOurHookCommand(h.command)) add(h.value.event, "config.toml");
      else if (isUpstreamHookCommand(h.command)) add(h.value.event, "config.toml (OpenViking's Node plugin)");
    }
  }
  const p = state.plugin;
  if (p?.enabled && Array.isArray(p.manifest?.hooks)) {
    const where = `plugin ${PLUGIN_ID}${p.owner === "ours" ? "" : " (OpenViking's Node plugin)"}`;
    for (const h of p.manifest.hooks) if (isRecord(h)) add(h.event, where);
  }
  return byEvent;
}

/** Every hook event registered exactly once, and our plugin enabled. */
function hookCheck(state: KimiState, run: Run): Check {
  const regs = [...registrations(state)];
  const detail = regs.map(([e, w]) => `${e}: ${w.length ? w.join(" + ") : "not registered"}`);
  const missing = regs.filter(([, w]) => !w.length).map(([e]) => e);
  const twice = regs.filter(([, w]) => w.length > 1).map(([e, w]) => `${e} ×${w.length}`);
  const c = checkOf("hooks");
  if (state.plugin?.owner === "ours" && !state.plugin.enabled) {
    const fix = `in Kimi run \`/plugins enable ${PLUGIN_ID}\` (or run ${run("install")})`;
    return c.fail(`the ${PLUGIN_ID} plugin is disabled in Kimi`, fix, detail);
  }
  const removeUpstream =
    `\`/plugins remove ${PLUGIN_ID}\` or its \`install.sh --harness kimicode --uninstall --yes\``;
  return twice.length
    ? c.fail(
      `hooks registered more than once (${twice.join(", ")}): every turn would be captured twice`,
      `run ${run("install")}: it keeps the plugin's registration only; remove OpenViking's Node plugin ` +
        `with ${removeUpstream}`,
      detail,
    )
    : missing.length === HOOKS.length
    ? c.fail("no openviking hook is registered", installFix(run), detail)
    : missing.length
    ? c.fail(
      `not registered: ${missing.join(", ")}`,
      `${installFix(run)} again to restore every hook`,
      detail,
    )
    : regs.some(([, w]) => w.includes("config.toml"))
    ? c.warn(
      "the hooks are registered in config mode (config.toml), which is gone: an older version installed them",
      `run ${run("install")}: it moves this home to the plugin`,
      detail,
    )
    : new Set(regs.map(([, w]) => w[0])).size === 1
    ? c.ok(`all ${HOOKS.length} hooks registered once (${regs[0][1][0]})`)
    : c.ok(`all ${HOOKS.length} hooks registered once`, undefined, detail);
}

/** Our MCP server registered exactly once (mcp.json or the plugin), and mcp.json valid. */
function mcpCheck(state: KimiState, run: Run): Check {
  const [p, c] = [state.plugin, checkOf("mcp")];
  const inPlugin = p?.enabled && isRecord(p.manifest?.mcpServers) && MCP_SERVER_NAME in p.manifest.mcpServers;
  const where = [
    ...(state.mcpOwner === "ours" ? ["mcp.json"] : []),
    ...(state.mcpOwner === "upstream" ? ["mcp.json (OpenViking's Node proxy)"] : []),
    ...(inPlugin && !p.mcpDisabled ? [`plugin ${PLUGIN_ID}`] : []),
  ];
  if (state.mcpError) {
    const fix = `fix mcp.json or restore mcp.json.bak, then run ${run("install")}`;
    return c.fail(`mcp.json is not valid JSON (${state.mcpError})`, fix);
  }
  const enable = `in Kimi run \`/plugins mcp enable ${PLUGIN_ID} ${MCP_SERVER_NAME}\``;
  return !where.length
    ? c.fail(
      "the OpenViking MCP server is not registered",
      p?.owner === "ours" && p.mcpDisabled ? enable : installFix(run),
    )
    : where.length > 1
    ? c.warn(
      `MCP server registered ${where.length} times (${where.join(" + ")}): the model sees every tool twice`,
      `run ${run("install")}: it keeps the plugin's registration only`,
    )
    : state.mcpOwner !== "foreign"
    ? c.ok(`registered in ${where[0]}`)
    : c.warn(`registered in ${where[0]} (mcp.json also has a foreign "${MCP_SERVER_NAME}" entry)`);
}

/** Kimi's home is there; config.toml parses with [[hooks]] Kimi accepts; the plugin registry reads. */
function kimiChecks(home: string, state: KimiState): Check[] {
  const [c, e, h] = [checkOf("config"), state.configError, checkOf("kimi-home")];
  return [
    state.homeExists ? h.ok(`Kimi Code home ${home}`) : h.fail(
      `Kimi Code home ${home} does not exist`,
      "install Kimi Code (`npm install -g @moonshot-ai/kimi-code`) and run it once, or set KIMI_CODE_HOME",
    ),
    e?.startsWith("cannot be read")
      ? c.fail(
        `${state.paths.config} ${e}`,
        "make it a readable UTF-8 file again (or restore config.toml.bak); Kimi cannot read it either",
      )
      : e
      ? c.fail(
        `config.toml does not parse: ${e}`,
        "fix it (`kimi doctor config` shows where) or restore config.toml.bak",
      )
      : state.invalidHookKeys.length
      ? c.fail(
        "config.toml has [[hooks]] entries Kimi rejects, so Kimi ignores all of them",
        "do what each line above says",
        state.invalidHookKeys,
      )
      : c.ok(state.configText === undefined ? "no config.toml (nothing to parse)" : "config.toml parses"),
    ...(state.registryError && state.registryText !== undefined
      ? [checkOf("plugins").fail(state.registryError)]
      : []),
  ];
}

/** What is registered: the hooks (and any of ours outside the block), the MCP server. */
function registrationChecks(state: KimiState, run: Run): Check[] {
  const stray = state.strayHooks.map((h) => `hooks[${h.index}]: ${h.command}`);
  const outside = checkOf("hooks-outside-block").warn(
    "openviking-kimi [[hooks]] found outside the marked block (Kimi may have rewritten config.toml)",
    `uninstall cannot remove these: delete them by hand, then run ${run("install")}`,
    stray,
  );
  return [hookCheck(state, run), ...(stray.length ? [outside] : []), mcpCheck(state, run)];
}

/** The program our plugin's hooks run, its `<program> version` line, and where it runs (the plugin's root). */
type Registered = { label: string; path: string; command: string; cwd: string };

/** The first 64 KiB of file `path` as text ("" when it cannot be read): enough for a launcher's marker line. */
async function headOf(path: string): Promise<string> {
  return await Deno.open(path).then(async (f) => {
    using file = f;
    const buf = new Uint8Array(64 * 1024);
    return new TextDecoder().decode(buf.subarray(0, await file.read(buf) ?? 0));
  }, () => "");
}

/** The program: there and executable; behind a launcher, its copy whole and the Deno it would run. */
async function programChecks(r: Registered, head: string, env: paths.Env, os: OsFamily): Promise<Check[]> {
  if (!(await isExecutable(r.path, os))) {
    const what = (await exists(r.path)) ? "is not an executable file" : "is gone (moved or deleted)";
    return [checkOf("command").fail(`${r.label}: ${r.path} ${what}`, REINSTALL)];
  }
  const info = launcherInfo(head);
  if (!info) return [];
  const files = [COPY_FILES.main, COPY_FILES.hook, COPY_FILES.info];
  const missing =
    (await Promise.all(files.map(async (f) => await isFile(paths.joinPath(info.dir, f)) ? [] : [f])))
      .flat();
  if (missing.length) {
    const summary = `${r.label}: the program copy ${info.dir} is incomplete (missing ${missing.join(", ")})`;
    return [checkOf("command").fail(summary, REINSTALL)];
  }
  const deno = await findDeno(info.deno, env);
  if (!deno) {
    const copy = await readTextIfExists(paths.joinPath(info.dir, COPY_FILES.info)).catch(() => undefined);
    const { source } = asRecord(parseJsonOrUndefined(copy));
    const from = typeof source === "string" ? source : "a checkout";
    const gone = !await isFile(paths.joinPath(from, "deno.json"));
    const c = denoNotFound({ deno: info.deno, source: from, gone });
    return [{ ...c, summary: `${r.label}: ${c.summary}` }];
  }
  if (deno !== info.deno) {
    const summary =
      `${r.label}: the Deno install used (${info.deno}) is gone; the launcher runs ${deno} instead`;
    return [checkOf("deno").warn(summary, `${REINSTALL}, so it records ${deno}`)];
  }
  return [checkOf("program").ok(`${r.label}: the program copy ${info.dir}, run by ${deno}`)];
}

/** Runs `<program> version` as Kimi runs a hook: through a shell, in the registration's directory, with `env`. */
async function versionCheck(env: paths.Env, state: KimiState, r: Registered): Promise<Check> {
  const windows = Deno.build.os === "windows";
  const vars = { ...env, KIMI_CODE_HOME: state.paths.home, KIMI_PLUGIN_ROOT: r.cwd };
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  const result = await new Deno.Command(windows ? "cmd.exe" : "/bin/sh", {
    args: windows ? ["/d", "/s", "/c", r.command] : ["-c", r.command],
    cwd: r.cwd,
    env: Object.fromEntries(Object.entries(vars).filter((e): e is [string, string] => e[1] !== undefined)),
    clearEnv: true,
    stdin: "null",
    signal: AbortSignal.timeout(20_000),
  }).output().then(
    (o) => ({ code: o.code, stdout: text(o.stdout), stderr: text(o.stderr) }),
    (error) => ({ code: -1, stdout: "", stderr: (error as Error).message }),
  );
  const [c, version, run] = [checkOf("command"), result.stdout.split("\n").at(-1) ?? "", runIn(env)];
  if (result.code !== 0) {
    return c.fail(
      `${r.label}: \`${r.command}\` does not run (exit ${result.code})`,
      `run ${run("install")} again (from a checkout: \`deno task -q install\`)`,
      result.stderr ? [result.stderr.split("\n").slice(-3).join(" | ")] : undefined,
    );
  }
  if (version === VERSION) return c.ok(`${r.label}: \`${r.command}\` runs (${version})`);
  return c.warn(
    `${r.label} run openviking-kimi ${version || "(unknown)"}, this is ${VERSION}`,
    `run ${run("install")} with the version you want the hooks to use`,
  );
}

/**
 * A program install placed (a copy's launcher, or the binary; not a checkout's own script) in a home the record
 * of homes does not list: its hooks do nothing (memory/dispatch.ts, as after a purge of the home while Kimi
 * runs); install lists it again.
 */
async function recordCheck(env: paths.Env, state: KimiState, r: Registered, head: string): Promise<Check[]> {
  const placed = r.path.startsWith(`${paths.integrationDir(env)}/`) || !head.startsWith("#!") ||
    launcherInfo(head) !== undefined;
  const home = state.paths.home;
  if (!placed || (await homeListed(env, home)) !== false) return [];
  const other = paths.orNoHome(() => paths.kimiHome(env)) === home ? "" : ` --kimi-home ${home}`;
  return [
    checkOf("homes").fail(
      `${paths.homesFile(env)} does not list ${home}: its hooks (${r.label}) do nothing: no recall, no ` +
        "capture (as after `uninstall --purge` of this home)",
      `run ${runIn(env)(`install${other}`)}: it lists the home again`,
    ),
  ];
}

/** Our plugin's directory whole, its program (there, its copy whole, its Deno found), that it runs; the record. */
async function commandChecks({ env, os }: DoctorContext, state: KimiState): Promise<Check[]> {
  const [p, run] = [state.plugin, runIn(env)];
  const exe = os === "windows" ? ".\\bin\\openviking-kimi.exe" : "./bin/openviking-kimi";
  const bin = p && `${p.root}${exe.slice(1).replaceAll("\\", "/")}`;
  const what = p?.owner === "missing"
    ? (p.root ? `${p.root} has no kimi.plugin.json` : "the record has no root directory")
    : p?.owner === "ours" && !(await exists(bin!)) && `${bin} is missing`;
  if (what) {
    const broken =
      `plugins/installed.json registers "${PLUGIN_ID}", but its directory is incomplete: ${what}`;
    const fix = `run ${run("install")} again (or ${run("uninstall")} to drop the record)`;
    return [checkOf("plugin").fail(broken, fix)];
  }
  if (p?.owner !== "ours") return [];
  const r = { label: `plugin ${PLUGIN_ID}`, path: bin!, cwd: p.root, command: `${exe} version` };
  const head = await headOf(r.path);
  const checks = await programChecks(r, head, env, os);
  if (!checks.some((c) => c.status === "fail")) checks.push(await versionCheck(env, state, r));
  return [...checks, ...await recordCheck(env, state, r, head)];
}

/** A home directory, and hook state and queue directories we can write (probed by writing; nothing left). */
async function homeChecks(env: paths.Env): Promise<Check[]> {
  const ignored = paths.ignoredOverrides(env);
  const state = paths.orNoHome(() => paths.hookStateDir(env));
  const queue = paths.orNoHome(() => paths.pendingDir(env));
  const [home, dirs] = [checkOf("home"), checkOf("state-dirs")];
  if (!state || !queue) {
    return [home.fail(
      "HOME is not set (or not an absolute path): the hooks keep no state, capture nothing and read no config " +
        "file; recall uses the OPENVIKING_* environment only",
      "start Kimi Code with HOME set to your home directory, or set OPENVIKING_HOME (and KIMI_CODE_HOME) to " +
        "absolute directories",
      ignored.map((o) => `ignored (not absolute): ${o}`),
    )];
  }
  const problems = [];
  for (const dir of [state, queue]) problems.push(await unwritableReason(dir, { removeCreated: true }));
  return [
    ignored.length
      ? home.warn(
        "some path settings are not absolute and are ignored",
        "give these variables absolute paths (or unset them)",
        ignored,
      )
      : home.ok("home directory set"),
    problems.some(Boolean)
      ? dirs.fail(
        "the hook state or the pending queue cannot be written: recall still works, but nothing is captured " +
          "(the journal keeps every turn until this is fixed)",
        `make ${state} and ${queue} directories you can write (\`mkdir -p DIR && chmod 700 DIR\`; move a file ` +
          "that is in the way), or set OPENVIKING_HOOK_STATE_DIR / OPENVIKING_PENDING_DIR to ones",
        problems.filter(Boolean),
      )
      : dirs.ok(`hook state ${state} and queue ${queue} are writable`),
  ];
}

/** `said` as check `id` of `status`. */
const checked = (id: string, status: Check["status"], said: Said) =>
  checkOf(id)[status](said.summary, said.fix, said.detail);

/** The queue, the files replay set aside, the refused writes: what `status` says of them. */
async function placeChecks(env: paths.Env, config: Config, places: Places, now: number): Promise<Check[]> {
  const { queue, rejected } = await placesStatus(env, config, places);
  const [q, away, aside] = [queueWords(queue, now), queue.elsewhere, queues.setAsideWords(places.setAside)];
  const unread = (id: string, dir: string, e: Error) =>
    checkOf(id).warn(`cannot read ${dir}: ${e.message}`, `make ${dir} readable and writable by you`);
  return [
    places.queue instanceof Error
      ? unread("queue", places.pending, places.queue)
      : q && away
      ? checked("queue", "warn", { ...q, summary: `${q.summary}; ${away.summary}`, fix: away.fix })
      : q
      ? checked("queue", "info", q)
      : checkOf("queue").ok(`empty (${places.pending})`),
    ...aside ? [checked("set-aside", "warn", aside)] : [],
    places.rejected instanceof Error
      ? unread("rejected", places.rejectedDir, places.rejected)
      : rejected.entries
      ? checked("rejected", "warn", rejectedWords(rejected, now))
      : checkOf("rejected").ok("no write refused by OpenViking"),
  ];
}

/** Journal protocol versions this release was tested with. */
const KNOWN_PROTOCOLS = ["1.4", "1.5"];

/** The journal protocols the capture states saw that this release does not know (the known ones: nothing). */
async function protocolCheck(dir: string): Promise<Check[]> {
  const seen = new Set<string>();
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile || !e.name.endsWith(".json") || e.name.endsWith(".prompt.json")) continue;
    const text = await Deno.readTextFile(paths.joinPath(dir, e.name)).catch(() => undefined);
    const version = SessionStateSchema.safeParse(parseJsonOrUndefined(text)).data?.protocolVersion;
    if (version && !KNOWN_PROTOCOLS.includes(version)) seen.add(version);
  }
  if (!seen.size) return [];
  const summary = `journal protocol ${[...seen].join(", ")} seen; this release knows ${
    KNOWN_PROTOCOLS.join(", ")
  }`;
  return [
    checkOf("protocol").warn(summary, "update openviking-kimi; until then capture may miss parts of turns"),
  ];
}

/** The newest captured session as `status` folds it: its captures, and its last error with the fix. */
async function captureChecks(
  env: paths.Env,
  config: Config,
  places: Places,
  { answers, now }: { answers: boolean; now: number },
): Promise<Check[]> {
  const c = checkOf("captures");
  const s = (await localSessions(env, config, {}, readable(places))).find((s) => s.captures.runs > 0);
  if (!s) return [c.info("no capture recorded yet (finish a turn in Kimi Code, then run doctor again)")];
  const [summary, e] = [`${s.kimiSessionId}: ${capturedWords(s.captures)}`, s.lastError];
  if (s.queue.elsewhere) {
    return [c.warn(`${summary}; its writes wait for another server or identity, as the queue check says`)];
  }
  if (!e) return [c.ok(summary)];
  if (answers && s.queue.entries) {
    const { queue } = await placesStatus(env, config, places);
    const waiting = `the server answers now, and ${queues.countWords(s.queue)} wait in the queue`;
    return [c.warn(`${summary}; ${waiting}`, `nothing to do: they go ${queue.nextReplay}`)];
  }
  return [c.warn(`${summary}; last error ${ago(e.at, now)}: ${e.message}`, e.fix)];
}

/** Recall paused (the breaker), as `status` says it; nothing when not. */
function recallChecks({ paused: p }: Places, now: number): Check[] {
  return p ? [checked("recall", p.answeredAt === undefined ? "warn" : "info", pausedWords(p, now))] : [];
}

/** What the newest commits made: a failed run fails, a run that made nothing warns; nothing when they made memory. */
async function extractionChecks(config: Config): Promise<Check[]> {
  const alarm = await askAlarm(createClient(config, "", { timeoutMs: 3000 }));
  if (!alarm) return [];
  const { kind, summary, fix } = alarmWords(alarm);
  return [checkOf("extraction")[kind === "failed" ? "fail" : "warn"](summary, fix)];
}

/** Runs one part of doctor; whatever it throws becomes a failing check saying what could not be checked. */
async function guarded(id: string, what: string, part: () => Part): Promise<Check[]> {
  try {
    return await part();
  } catch (error) {
    return [
      checkOf(id).fail(
        `doctor could not check ${what}: ${(error as Error)?.message ?? String(error)}`,
        "fix what the message names and run doctor again; if it persists, report it with this output",
      ),
    ];
  }
}

/**
 * Every part of doctor in print order: Kimi's side only with a Kimi home, the local places only with a home
 * directory too; scrubbed (a server's words may quote the key back).
 */
export async function runDoctor(ctx: DoctorContext): Promise<Check[]> {
  const { env, home } = ctx;
  const homes = await guarded("home", "the home directory", () => homeChecks(env));
  const { config, warnings } = await loadConfig(env, ctx.cwd);
  const state = home ? await readKimiState(home) : undefined;
  const failed = homes.some((c) => c.id === "home" && c.status === "fail");
  const places = state && !failed ? await readPlaces(env, config) : undefined;
  const settings = checkOf("settings").warn(
    "some settings were ignored",
    "correct the values named above (environment or ~/.openviking/ovcli.conf); a workspace file may only make " +
      "memory stricter: set the others in ~/.openviking/ovcli.conf",
    warnings,
  );
  const checks: Check[] = [];
  const answers = () => !checks.some((c) => (c.id === "server" || c.id === "auth") && c.status === "fail");
  const kimi = (part: (s: KimiState) => Part) => () => state ? part(state) : [];
  const local = (part: (p: Places) => Part) => () => places ? part(places) : [];
  const parts: [string, string, () => Part][] = [
    ["kimi-home", "Kimi's home", kimi((s) => kimiChecks(home, s))],
    ["hooks", "the registrations", kimi((s) => registrationChecks(s, runIn(env)))],
    ["command", "the registered program", kimi((s) => commandChecks(ctx, s))],
    ["home", "the home directory", () => homes],
    ["settings", "the settings", kimi(() => warnings.length ? [settings] : [])],
    ["server", "the server", () => serverChecks(config, undefined, { env })],
    ["queue", "the pending queue", local((p) => placeChecks(env, config, p, ctx.now))],
    [
      "captures",
      "the captures",
      local((p) => captureChecks(env, config, p, { answers: answers(), now: ctx.now })),
    ],
    ["protocol", "the capture states", local(() => protocolCheck(paths.hookStateDir(env)).catch(() => []))],
    ["recall", "the recall breaker", local((p) => recallChecks(p, ctx.now))],
    ["extraction", "the commits", local(() => answers() ? extractionChecks(config) : [])],
  ];
  for (const [id, what, part] of parts) checks.push(...await guarded(id, what, part));
  return scrub(checks, [config.apiKey]) as Check[];
}

const MARK: Record<Check["status"], string> = { ok: "✓", info: "·", warn: "!", fail: "✗" };

/** The checks as text: a line each, its details, its fix when it is not ok, then the verdict. */
export function renderChecks(checks: readonly Check[]): string {
  const failed = checks.filter((c) => c.status === "fail").length;
  return [
    `openviking-kimi doctor ${VERSION}`,
    ...checks.flatMap((c) => [
      `${MARK[c.status]} ${c.id}: ${c.summary}`,
      ...(c.detail ?? []).map((d) => `    ${d}`),
      ...(c.fix && (c.status === "fail" || c.status === "warn") ? [`    fix: ${c.fix}`] : []),
    ]),
    failed ? `${failed} problem(s) found.` : "Everything needed for memory is in place.",
  ].join("\n");
}

/** `openviking-kimi doctor`: exit 1 when a check fails. What a server said goes through the printed-text gate. */
export async function doctorCommand(options: { json: boolean; kimiHome?: string }, env = paths.processEnv()) {
  const checks = await guarded("doctor", "the setup", () => {
    const cwd = invocationCwd(env);
    const home = paths.orNoHome(() => kimiHomeFor(env, options.kimiHome, cwd)) ?? "";
    return runDoctor({ env, home, os: currentOs(), now: Date.now(), cwd });
  });
  const ok = !checks.some((c) => c.status === "fail");
  console.log(
    options.json ? reportJson({ version: VERSION, ok, checks }, 2) : printable(renderChecks(checks)),
  );
  return ok ? 0 : 1;
}
