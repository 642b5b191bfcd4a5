/** Helpers to run this project's entry points as real processes, with the production flags. */

import { productionFlags } from "../../lib/self.ts";

/** Repository root. */
export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** Output of a finished process. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `run` + the production flags + the config: a helper script then runs with exactly the binary's permissions. */
export async function prodRunArgs(): Promise<string[]> {
  return ["run", ...(await productionFlags(ROOT)), "--config", `${ROOT}/deno.json`];
}

/** The argv prefix that runs main.ts exactly as production does (`deno run <cli task flags> main.ts`). */
export async function cliArgs(): Promise<string[]> {
  return [...await prodRunArgs(), `${ROOT}/main.ts`];
}

let denoDirCache: string | undefined;

/** Deno's module cache of this test run; child processes with a temporary HOME must share it. */
export function denoDir(): string {
  if (denoDirCache) return denoDirCache;
  const fromEnv = Deno.env.get("DENO_DIR");
  if (fromEnv) return denoDirCache = fromEnv;
  const out = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped", stderr: "null" })
    .outputSync();
  denoDirCache = (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
  return denoDirCache;
}

/**
 * The machine's network and TLS settings: a child that may reach a package registry (install's first `deno
 * bundle` downloads esbuild) needs them even when its environment is otherwise cleared.
 */
const NETWORK_VARS = ("NODE_EXTRA_CA_CERTS DENO_CERT DENO_TLS_CA_STORE SSL_CERT_FILE SSL_CERT_DIR " +
  "HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy").split(" ");

/** What a child with a cleared environment still needs of this machine: Deno's cache and the network settings. */
export function denoEnv(): Record<string, string> {
  const env: Record<string, string> = { DENO_DIR: denoDir() };
  for (const name of NETWORK_VARS) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** How {@link runProcess} runs a command. */
interface ProcessOptions {
  /** The environment (with `clearEnv`, all of it). */
  env?: Record<string, string>;
  clearEnv?: boolean;
  cwd?: string;
  /** Bytes for its stdin (closed after them); none: stdin is /dev/null. */
  stdin?: string | Uint8Array;
  /** Killed after this long (a hung child fails the test instead of hanging it). */
  timeoutMs?: number;
}

/** Starts `command args`, feeds it `stdin` and closes it (none: stdin is /dev/null); its output `output`. */
export async function spawnFed(
  command: string,
  args: string[],
  options: ProcessOptions,
  output: "piped" | "null" = "piped",
): Promise<Deno.ChildProcess> {
  const { env, clearEnv, cwd, stdin, timeoutMs } = options;
  const child = new Deno.Command(command, {
    args,
    env,
    clearEnv,
    cwd,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: output,
    stderr: output,
    signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
  }).spawn();
  if (stdin === undefined) return child;
  const w = child.stdin.getWriter();
  await w.write(typeof stdin === "string" ? new TextEncoder().encode(stdin) : stdin).catch(() => {});
  await w.close().catch(() => {});
  return child;
}

/** Runs `command args` to its end, feeding `stdin`; its exit code and decoded output. */
export async function runProcess(
  command: string,
  args: string[],
  options: ProcessOptions = {},
): Promise<RunResult> {
  const out = await (await spawnFed(command, args, options)).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Runs `openviking-kimi <args>` under the production flags with the given env and stdin bytes; a run still
 * going after `timeoutMs` is killed (the test then fails instead of hanging).
 */
export async function runCli(args: string[], options: ProcessOptions = {}): Promise<RunResult> {
  return await runProcess(Deno.execPath(), [...(await cliArgs()), ...args], {
    ...options,
    env: options.env ? { ...denoEnv(), ...options.env } : undefined,
  });
}

/**
 * Starts `openviking-kimi <args>` under the production flags with exactly `env` (output discarded), feeds it
 * `stdin` and closes it: for a test that must kill the process, or watch it while it runs.
 */
export async function startCli(
  args: string[],
  env: Record<string, string>,
  stdin: string,
  timeoutMs = 120_000,
): Promise<Deno.ChildProcess> {
  const options = { env: { ...denoEnv(), ...env }, clearEnv: true, stdin, timeoutMs };
  return await spawnFed(Deno.execPath(), [...(await cliArgs()), ...args], options, "null");
}
