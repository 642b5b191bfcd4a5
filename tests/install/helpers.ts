/** Helpers for running the real CLI in an isolated HOME without losing Deno's module cache. */

import { assertEquals } from "../support/assert.ts";
import { denoEnv, ROOT, runCli } from "../support/run.ts";
import { currentSelf, type Self } from "../../install/spec.ts";
import type { Context, InstallOptions } from "../../install/transaction.ts";
import type { runInstall } from "../../install/install.ts";
import { VERSION } from "../../lib/version.ts";

/** The test process's environment with HOME replaced and every Kimi/OpenViking variable removed. */
export function isolatedEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  // INIT_CWD: set by the deno task running the tests.
  const kept = Object.entries(Deno.env.toObject()).filter(([k]) => !/^(KIMI_|OPENVIKING_|INIT_CWD$)/.test(k));
  return {
    ...Object.fromEntries(kept),
    HOME: home,
    USERPROFILE: home,
    ...denoEnv(),
    NO_COLOR: "1",
    ...extra,
  };
}

/** A stand-in release binary at `<root>/dist/openviking-kimi`: it says the version and exits 0. */
export async function fakeCompiled(root: string): Promise<Self> {
  const exe = `${root}/dist/openviking-kimi`;
  await Deno.mkdir(`${root}/dist`, { recursive: true });
  await Deno.writeTextFile(exe, `#!/bin/sh\n[ "$1" = version ] && echo ${VERSION}\nexit 0\n`, {
    mode: 0o755,
  });
  return { kind: "compiled", execPath: exe };
}

/** A clone of this checkout at `to`: its tracked (and new, unignored) files, tests, CI and docs left out. */
export async function cloneCheckout(to: string): Promise<string> {
  const listed = new TextDecoder().decode(
    (await new Deno.Command("git", {
      args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      cwd: ROOT,
      stdout: "piped",
    }).output()).stdout,
  ).split("\0").filter((p) => p && !/^(tests|\.github|docs)\//.test(p));
  for (const rel of listed) {
    await Deno.mkdir(`${to}/${rel}`.replace(/\/[^/]*$/, ""), { recursive: true });
    await Deno.copyFile(`${ROOT}/${rel}`, `${to}/${rel}`).catch(() => {});
  }
  return to;
}

/**
 * The fix install and doctor give when nothing answers, word for word, naming README's {@link NO_SERVER_HEADING}
 * (`envUrl`: the address came from OPENVIKING_URL, which wins over the one install saves).
 */
export const noServerFix = (command: string, envUrl = false): string =>
  'start the server (README: "No server yet?"), or ' +
  (envUrl
    ? "correct OPENVIKING_URL (set in your environment, it wins over the saved address), or unset it and "
    : "") +
  `save its address: \`${command} install --url http://HOST:1933\`; writes wait in the queue until then`;

/** README's heading that {@link noServerFix} points to. */
export const NO_SERVER_HEADING = "### No server yet?";

/** A 127.0.0.1 address where nothing listens (a port just let go). */
export function closedAddress(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return `http://127.0.0.1:${port}`;
}

/**
 * A `fetch` standing for an OpenViking server (api_key mode) that takes every key: what install asks before it
 * saves one (`/health`, then a data route) answered as the real one does.
 */
export const acceptingFetch: typeof fetch = (input) => {
  const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
  const body = path === "/health"
    ? { status: "ok", healthy: true, version: "0.5.2-fake", auth_mode: "api_key" }
    : { status: "ok", result: [] };
  return Promise.resolve(Response.json(body));
};

/** Install's options: `partial` over no credentials, no dry run, no --yes, no --purge. */
export const opts = (partial: Partial<InstallOptions> = {}): InstallOptions => ({
  ...{ credentials: {}, dryRun: false, yes: false, purge: false },
  ...partial,
});

/** A Kimi home under `root` and the context of an in-process install there; what it prints is kept. */
export async function installSandbox(root: string, env: Record<string, string | undefined> = {}) {
  const home = `${root}/home`;
  const kimi = `${home}/.kimi-code`;
  await Deno.mkdir(kimi, { recursive: true });
  const lines: string[] = [];
  let seen = 0;
  const self = await currentSelf();
  const ctx = (s: Self = self, extra: Partial<Context> = {}): Context => ({
    env: { HOME: home, PATH: Deno.env.get("PATH"), ...env },
    self: s,
    os: "posix",
    out: { info: (l) => lines.push(l), error: (l) => lines.push(`ERR ${l}`) },
    now: new Date("2026-11-30T12:00:00.000Z"),
    cwd: root,
    ...extra,
  });
  /** The lines printed since the last call. */
  const said = () => {
    const text = lines.slice(seen).join("\n");
    seen = lines.length;
    return text;
  };
  /** Runs install or uninstall in-process (`extra` over the context; exit `code`); what it printed. */
  const run = async (
    command: typeof runInstall,
    o: Partial<InstallOptions> = {},
    extra: Partial<Context> = {},
    code = 0,
  ) => {
    said();
    assertEquals(await command(ctx(extra.self, extra), opts(o)), code, lines.join("\n"));
    return said();
  };
  const plugin = `${kimi}/plugins/managed/openviking-memory`;
  return {
    run,
    root,
    home,
    kimi,
    ov: `${home}/.openviking`,
    plugin,
    lines,
    ctx,
    said,
    all: () => lines.join("\n"),
  };
}

/** Whether something (a link too, dangling or not) is at `path`. */
export const exists = (path: string): Promise<boolean> => Deno.lstat(path).then(() => true, () => false);

/** A file's text, or undefined when it cannot be read. */
export const read = (path: string): Promise<string | undefined> =>
  Deno.readTextFile(path).catch(() => undefined);

/** Every entry under `dir`: file bytes (one character each), directories, and symlink targets. */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(d: string) {
    for await (const e of Deno.readDir(d)) {
      const p = `${d}/${e.name}`;
      const info = await Deno.lstat(p);
      const mode = (info.mode ?? 0) & 0o777;
      if (info.isSymlink) out[p] = `-> ${await Deno.readLink(p)}`;
      else if (info.isDirectory) out[p] = `<dir ${mode}>`;
      else out[p] = `${mode} ${new TextDecoder("latin1").decode(await Deno.readFile(p))}`;
      if (info.isDirectory) await walk(p);
    }
  }
  await walk(dir);
  return out;
}

/** Runs the CLI with `env` (and nothing else of this process's environment); exit 0 expected unless `code`. */
export async function cli(env: Record<string, string>, args: string[], code = 0) {
  const r = await runCli(args, { env, clearEnv: true, cwd: env.HOME, timeoutMs: 120_000 });
  assertEquals(r.code, code, `${args.join(" ")}\n${r.stdout}\n${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

/** Every path under `dir` (directories end in "/"; those `skip` matches left out), sorted. */
export async function tree(dir: string, skip: RegExp = /^$/): Promise<string[]> {
  const entries = Object.entries(await snapshot(dir)).map(([p, v]) =>
    p.slice(dir.length) + (v.startsWith("<dir") ? "/" : "")
  );
  return entries.filter((p) => !skip.test(p.replace(/\/$/, ""))).sort();
}

/** A planner's result that must succeed (its refusal thrown). */
export function ok<P extends { ok: boolean }>(plan: P | { ok: false; error: string }): P & { ok: true } {
  if (!plan.ok) throw new Error((plan as { error: string }).error);
  return plan as P & { ok: true };
}
