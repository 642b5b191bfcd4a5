/** `openviking-kimi doctor`: every check, each problem with its fix; exit 1 when one fails. Never prints a key. */

import { adviceFor } from "../openviking/advice.ts";
import { type Config, loadConfig } from "../openviking/config.ts";
import * as queues from "../openviking/queue.ts";
import { HOOKS } from "../kimi/hooks.ts";
import { SESSION_PREFIX } from "../memory/context.ts";
import { type SessionState, SessionStateSchema } from "../memory/state.ts";
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
import { type Places, readPlaces, rejectedFix, totals } from "./status.ts";

/** What doctor looks at: the environment, Kimi's home ("" without one), the workspace, the OS, the time. */
export type DoctorContext = { env: paths.Env; home: string; cwd?: string; os: OsFamily; now: number };
type Part = Check[] | Promise<Check[]>;

const iso = (at: number) => new Date(at).toISOString();
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

/** A queue's messages and commits of how many sessions, in words, and a line for each of its first 5 sessions. */
const inWords = (q: queues.QueueSummary) => ({
  words: queues.countWords(totals(q)),
  detail: q.sessions.slice(0, 5).map((s) => `${s.sessionId}: ${queues.countWords(s)}`),
});

/** The pending queue (per session), and the queue files replay set aside. */
async function queueChecks(env: paths.Env, config: Config, places: Places, now: number): Promise<Check[]> {
  const [c, { pending: dir, queue: q }] = [checkOf("queue"), places];
  const aside = queues.setAsideWords(places.setAside);
  const rest = aside ? [checkOf("set-aside").warn(aside.summary, aside.fix)] : [];
  if (q instanceof Error) {
    return [c.warn(`cannot read ${dir}: ${q.message}`, `make ${dir} readable and writable by you`), ...rest];
  }
  if (!q.entries) return [c.ok(`pending queue empty (${dir})`), ...rest];
  const oldest = Math.min(...q.sessions.map((s) => s.oldest), now);
  const { words, detail } = inWords(q);
  const summary = `${words} waiting in ${dir}, oldest from ${iso(oldest)}`;
  const away = queues.elsewhereOf(q.sessions, await queues.destinationFor(config));
  if (away) return [c.warn(`${summary}; ${away.summary}`, away.fix, detail), ...rest];
  if (now - oldest <= 3_600_000) return [c.info(summary), ...rest];
  const fix = "they are sent when the server takes them (at the next session start); send them now with " +
    `${runIn(env)("replay")}, and see the captures check below for why they wait`;
  return [c.warn(summary, fix, detail), ...rest];
}

/** The writes OpenViking refused for good (or that waited past the queue's age limit), kept aside. */
function rejectedCheck(env: paths.Env, places: Places): Check {
  const [c, { rejectedDir: dir, rejected: kept }] = [checkOf("rejected"), places];
  if (kept instanceof Error) return c.warn(`cannot read ${dir}: ${kept.message}`);
  if (!kept.entries) return c.ok("no write refused by OpenViking");
  const { words, detail } = inWords(kept);
  const l = kept.last;
  return c.warn(
    `${kept.entries} write(s) OpenViking refused (${words}) are kept in ${dir}` +
      (l ? `; the newest, ${iso(l.at)}: ${l.status ? `HTTP ${l.status}` : "never sent"}: ${l.message}` : ""),
    rejectedFix(env, dir),
    detail,
  );
}

/** Journal protocol versions this release was tested with. */
const KNOWN_PROTOCOLS = ["1.4", "1.5"];

/** The journal protocols the captures saw that this release does not know (the known ones: nothing to say). */
function protocolCheck(states: SessionState[]): Check[] {
  const unknown = [...new Set(states.map((s) => s.protocolVersion))]
    .filter((p): p is string => !!p && !KNOWN_PROTOCOLS.includes(p));
  if (!unknown.length) return [];
  const summary = `journal protocol ${unknown.join(", ")} seen; this release knows ${
    KNOWN_PROTOCOLS.join(", ")
  }`;
  return [
    checkOf("protocol").warn(summary, "update openviking-kimi; until then capture may miss parts of turns"),
  ];
}

/** The local places, and the capture states read before them. */
type Seen = Places & { seen: { name: string; state: SessionState }[] | Error };

/** The capture states in the hook state directory (prompt states skipped). */
async function seenSessions(dir: string): Promise<{ name: string; state: SessionState }[]> {
  const out = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile || !e.name.endsWith(".json") || e.name.endsWith(".prompt.json")) continue;
    const text = await Deno.readTextFile(paths.joinPath(dir, e.name)).catch(() => undefined);
    const parsed = SessionStateSchema.safeParse(parseJsonOrUndefined(text));
    if (parsed.success) out.push({ name: e.name.replace(/\.json$/, ""), state: parsed.data });
  }
  return out;
}

/** What the last captures did and why; for queued ones, what became of them (`answers`: the server answers). */
async function captureChecks(
  env: paths.Env,
  config: Config,
  places: Seen,
  answers: boolean,
): Promise<Check[]> {
  const [c, dir, run, { seen: sessions, queue }] = [
    checkOf("captures"),
    paths.hookStateDir(env),
    runIn(env),
    places,
  ];
  const rejected = rejectedCheck(env, places);
  if (sessions instanceof Error) return [c.warn(`cannot read ${dir}: ${sessions.message}`), rejected];
  const at = (s: SessionState) => s.lastCaptureAt ?? 0;
  const captured = sessions.filter((s) => at(s.state) > 0).sort((a, b) => at(b.state) - at(a.state));
  const said = (check: Check) => [check, rejected, ...protocolCheck(sessions.map((s) => s.state))];
  if (!captured.length) {
    return said(c.info(
      sessions.length
        ? `${sessions.length} session(s) seen, none captured yet`
        : "no capture recorded yet (finish a turn in Kimi Code, then run doctor again)",
    ));
  }
  const [{ name, state: newest }] = captured;
  const [last, cause] = [newest.lastCapture, newest.lastCapture?.cause];
  const held = queue instanceof Error
    ? undefined
    : queue.sessions.find((q) => q.sessionId === `${SESSION_PREFIX}${name}`);
  const away = held && !queues.goesTo(held.to, await queues.destinationFor(config));
  const fate = last && cause && last.queued > 0 && last.rejected === 0 && cause.kind !== "local"
    ? (!held?.entries ? "delivered" : away ? "elsewhere" : answers ? "waiting" : "blocked")
    : undefined;
  if (!last || !cause || fate === "delivered" || (!last.queued && !last.rejected && cause.kind !== "local")) {
    const gone = fate === "delivered" ? `; the ${last?.queued} message(s) it queued have left the queue` : "";
    return said(
      c.ok(`last capture ${iso(at(newest))} (${captured.length} session(s))${gone}`),
    );
  }
  const advice = adviceFor(cause, held?.to?.url ?? config.baseUrl, env);
  const then = `the last capture could not deliver then (${advice.summary})`;
  if (fate === "elsewhere") {
    const why = `${then}; its writes wait for another server or identity, as the queue check says`;
    return said(c.warn(why));
  }
  if (fate === "waiting") {
    const fix = "nothing to do: the session's next turn or the next Kimi session start sends them; to send " +
      `them now: ${run("replay")}`;
    return said(
      c.warn(
        `${then}; the server answers now, and its ${last.queued} message(s) wait in the queue`,
        fix,
      ),
    );
  }
  const summary = last.rejected > 0
    ? `the last capture had ${last.rejected} message(s) refused by OpenViking: ${cause.message}`
    : `the last capture could not deliver: ${advice.summary}` +
      (last.queued ? ` (${last.queued} message(s) wait in the queue)` : "");
  return said(c.warn(summary, advice.fix));
}

/** Recall paused (the breaker): since when and why, and when the server is asked again; nothing when not. */
function recallChecks({ paused: p }: Places): Check[] {
  if (!p) return [];
  const [c, since] = [checkOf("recall"), `memory paused since ${iso(p.since)}: ${p.reason}`];
  if (p.answeredAt !== undefined) {
    return [c.info(`${since}; the server answered at ${iso(p.answeredAt)}: the next prompt asks it again`)];
  }
  return [c.warn(
    `${since}; prompts do not ask the server`,
    `nothing to do once the server answers: the first prompt or session start after ${iso(p.nextProbeAt)} ` +
      "probes it (a search) and recall resumes; meanwhile check the server and its embedding and chat " +
      "models (OpenViking's log)",
  )];
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
  // The states before the queue: a capture that ends between the two reads queued before its state says so.
  const seen = state && !failed
    ? await seenSessions(paths.hookStateDir(env)).catch((e) =>
      e instanceof Deno.errors.NotFound ? [] : e as Error
    )
    : [];
  const places = state && !failed ? { ...await readPlaces(env, config), seen } : undefined;
  const settings = checkOf("settings").warn(
    "some settings were ignored",
    "correct the values named above (environment or ~/.openviking/ovcli.conf); a workspace file may only make " +
      "memory stricter: set the others in ~/.openviking/ovcli.conf",
    warnings,
  );
  const checks: Check[] = [];
  const answers = () => !checks.some((c) => (c.id === "server" || c.id === "auth") && c.status === "fail");
  const kimi = (part: (s: KimiState) => Part) => () => state ? part(state) : [];
  const local = (part: (p: Seen) => Part) => () => places ? part(places) : [];
  const parts: [string, string, () => Part][] = [
    ["kimi-home", "Kimi's home", kimi((s) => kimiChecks(home, s))],
    ["hooks", "the registrations", kimi((s) => registrationChecks(s, runIn(env)))],
    ["command", "the registered program", kimi((s) => commandChecks(ctx, s))],
    ["home", "the home directory", () => homes],
    ["settings", "the settings", kimi(() => warnings.length ? [settings] : [])],
    ["server", "the server", () => serverChecks(config, undefined, { env })],
    ["queue", "the pending queue", local((p) => queueChecks(env, config, p, ctx.now))],
    ["captures", "the captures", local((p) => captureChecks(env, config, p, answers()))],
    ["recall", "the recall breaker", local(recallChecks)],
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
