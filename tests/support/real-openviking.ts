/**
 * Runs the real OpenViking server (PyPI `openviking`, pinned) on loopback for end-to-end tests, with its
 * embedding and VLM endpoints pointed at the in-process OpenAI-compatible stub (`embedding-stub.ts`).
 */

import { type EmbeddingStub, startEmbeddingStub, STUB_MODEL } from "./embedding-stub.ts";
import { withLock } from "../../lib/lock.ts";
import { waitUntil } from "./kimi.ts";

/** The pinned OpenViking release. */
export const OPENVIKING_VERSION = "0.5.2";

/** The server cannot be installed or started here; `message` says why. */
class OpenVikingUnavailable extends Error {
  override name = "OpenVikingUnavailable";
}

/** How the started server authenticates: `dev` (no key, loopback only) or `api_key` (root key + a user key). */
type RealAuthMode = "dev" | "api_key";

/**
 * A running OpenViking server: its base URL (no trailing slash); in api_key mode the user key to send as
 * `Authorization: Bearer`, its account and user, and the root key; the model stub; the process id; the
 * milliseconds from spawn to a healthy `/health`; `stop()` stops the server and the stub and removes the temp
 * dir (kept when `OPENVIKING_KEEP=1`).
 */
export interface RealOpenViking {
  url: string;
  apiKey?: string;
  rootApiKey?: string;
  account?: string;
  user?: string;
  mode: RealAuthMode;
  stub: EmbeddingStub;
  pid: number;
  startupMs: number;
  stop(): Promise<void>;
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

async function run(
  cmd: string,
  args: string[],
  logFile?: string,
): Promise<{ ok: boolean; code: number; output: string }> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", stdin: "null" })
      .output();
    const output = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    if (logFile) {
      await Deno.writeTextFile(logFile, `$ ${cmd} ${args.join(" ")}\n${output}\n`, { append: true });
    }
    return { ok: out.success, code: out.code, output };
  } catch (e) {
    return { ok: false, code: -1, output: e instanceof Error ? e.message : String(e) };
  }
}

function tail(text: string, lines = 25): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** The first Python >= 3.10 found (`OPENVIKING_PYTHON`, then python3.12/3.11/3.13/3.10/python3). */
async function findPython(): Promise<string | undefined> {
  const fromEnv = Deno.env.get("OPENVIKING_PYTHON");
  for (
    const py of fromEnv ? [fromEnv] : ["python3.12", "python3.11", "python3.13", "python3.10", "python3"]
  ) {
    const r = await run(py, ["-c", "import sys; print(int(sys.version_info[:2] >= (3, 10)))"]);
    if (r.ok && r.output.trim().endsWith("1")) return py;
  }
  return undefined;
}

/** The install, once per process. */
let installed: Promise<string> | undefined;

/**
 * Installs `openviking==OPENVIKING_VERSION` into the venv (`OPENVIKING_VENV`, else `.cache/openviking-venv`)
 * unless already there; returns the path of `openviking-server`.
 */
async function install(): Promise<string> {
  const venv = Deno.env.get("OPENVIKING_VENV") ||
    new URL("../../.cache/openviking-venv", import.meta.url).pathname;
  const server = `${venv}/bin/openviking-server`;
  const marker = `${venv}/.openviking-version`;
  const ready = async () =>
    await exists(server) && (await Deno.readTextFile(marker).catch(() => "")).trim() === OPENVIKING_VERSION;
  if (await ready()) return server;
  const parent = venv.replace(/\/[^/]+$/, "");
  await Deno.mkdir(parent, { recursive: true });
  const locked = await withLock(`${venv}.lock`, async () => {
    if (await ready()) return server;
    const log = `${venv}.install.log`;
    await Deno.writeTextFile(
      log,
      `install openviking==${OPENVIKING_VERSION} at ${new Date().toISOString()}\n`,
    );
    if (!await exists(`${venv}/bin/python`)) {
      const python = await findPython();
      if (!python) throw new OpenVikingUnavailable("no Python >= 3.10 on PATH (set OPENVIKING_PYTHON)");
      const mk = await run(python, ["-m", "venv", venv], log);
      if (!mk.ok) throw new OpenVikingUnavailable(`${python} -m venv ${venv} failed:\n${tail(mk.output)}`);
    }
    const py = `${venv}/bin/python`;
    const spec = `openviking==${OPENVIKING_VERSION}`;
    const quietPip = ["-m", "pip", "install", "--disable-pip-version-check", "--quiet"];
    let result = await run(py, [...quietPip, "uv"], log);
    if (result.ok) {
      result = await run(py, ["-m", "uv", "pip", "install", "--quiet", "--python", py, spec], log);
    }
    if (!result.ok) result = await run(py, [...quietPip, spec], log);
    if (!result.ok || !await exists(server)) {
      throw new OpenVikingUnavailable(`installing ${spec} into ${venv} failed:\n${tail(result.output)}`);
    }
    await Deno.writeTextFile(marker, `${OPENVIKING_VERSION}\n`);
    return server;
  }, { waitMs: 20 * 60_000, pollMs: 1000 });
  if (!locked.acquired) throw new OpenVikingUnavailable(`timed out waiting for ${venv}.lock`);
  return locked.value;
}

/** The ov.conf written for a server on `port` using the stub at `stubBaseUrl`. */
export function buildOvConf(
  workDir: string,
  port: number,
  stubBaseUrl: string,
  dimension: number,
  rootApiKey?: string,
): Record<string, unknown> {
  const model = { provider: "openai", model: STUB_MODEL, api_key: "stub-key", api_base: stubBaseUrl };
  return {
    server: { host: "127.0.0.1", port, ...(rootApiKey ? { root_api_key: rootApiKey } : {}) },
    storage: { workspace: `${workDir}/data`, vectordb: { backend: "local" }, agfs: { backend: "local" } },
    embedding: { dense: { ...model, dimension, input: "text" } },
    vlm: { ...model, temperature: 0, max_retries: 0 },
  };
}

/** Resident memory of `pid` in KiB (`ps -o rss=`; Deno 2 only reads /proc/<pid> with --allow-all). */
export async function rssKiB(pid: number): Promise<number | undefined> {
  const r = await run("ps", ["-o", "rss=", "-p", String(pid)]);
  const n = Number(r.output.trim());
  return r.ok && Number.isFinite(n) && n > 0 ? n : undefined;
}

async function postJson(url: string, key: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json() as Record<string, unknown>;
  if (!res.ok) throw new OpenVikingUnavailable(`POST ${url} -> ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Starts the stub and a real OpenViking server. */
export async function startRealOpenViking(auth: RealAuthMode = "dev"): Promise<RealOpenViking> {
  const serverBin = await (installed ??= install());
  const dimension = 64;
  const timeoutMs = Number(Deno.env.get("OPENVIKING_START_TIMEOUT_MS")) || 90_000;
  const workDir = await Deno.makeTempDir({ prefix: "ovk-real-" });
  const keep = Deno.env.get("OPENVIKING_KEEP") === "1";
  const stub = await startEmbeddingStub(dimension);
  let child: Deno.ChildProcess | undefined;
  const cleanup = async () => {
    if (child) {
      const kill = (signal: Deno.Signal) => {
        try {
          child!.kill(signal);
        } catch { /* gone */ }
      };
      kill("SIGTERM");
      const timer = setTimeout(() => kill("SIGKILL"), 15_000);
      await child.status.finally(() => clearTimeout(timer));
      child = undefined;
    }
    await stub.stop();
    if (!keep) await Deno.remove(workDir, { recursive: true }).catch(() => {});
  };
  try {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const url = `http://127.0.0.1:${port}`;
    const rootApiKey = auth === "api_key" ? `root-${crypto.randomUUID()}` : undefined;
    const confPath = `${workDir}/ov.conf`;
    const conf = buildOvConf(workDir, port, stub.baseUrl, dimension, rootApiKey);
    await Deno.writeTextFile(confPath, JSON.stringify(conf, null, 2));
    await Deno.mkdir(`${workDir}/home`);
    const logFile = `${workDir}/server.log`;
    const started = performance.now();
    child = new Deno.Command("sh", {
      args: ["-c", 'exec "$0" --config "$1" >"$2" 2>&1', serverBin, confPath, logFile],
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: `${workDir}/home`,
        LANG: "C.UTF-8",
        PYTHONUNBUFFERED: "1",
        NO_PROXY: "127.0.0.1,localhost",
        LITELLM_LOCAL_MODEL_COST_MAP: "True",
        HF_HUB_OFFLINE: "1",
      },
      cwd: workDir,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let exited: Deno.CommandStatus | undefined;
    child.status.then((s) => exited = s);
    const healthy = (): Promise<boolean> | boolean =>
      exited !== undefined || fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })
        .then(async (res) => (await res.body?.cancel(), res.ok), () => false);
    const problem = await waitUntil(healthy, timeoutMs, "/health", 200).then(
      () => exited && `openviking-server exited with code ${exited.code} before /health answered`,
      (e: Error) => e.message,
    );
    if (problem) {
      throw new OpenVikingUnavailable(
        `${problem}; server log tail:\n${tail(await Deno.readTextFile(logFile).catch(() => ""))}`,
      );
    }
    const startupMs = Math.round(performance.now() - started);
    const server: RealOpenViking = {
      url,
      rootApiKey,
      mode: auth,
      stub,
      pid: child.pid,
      startupMs,
      stop: cleanup,
    };
    if (!rootApiKey) return server;
    const [account, user] = ["kimi-e2e", "coder"];
    const accounts = `${url}/api/v1/admin/accounts`;
    await postJson(accounts, rootApiKey, { account_id: account, admin_user_id: "admin" });
    const created = await postJson(`${accounts}/${account}/users`, rootApiKey, {
      user_id: user,
      role: "user",
    });
    const apiKey = (created.result as Record<string, unknown> | undefined)?.user_key;
    if (typeof apiKey !== "string") {
      throw new OpenVikingUnavailable(`user creation returned no key: ${JSON.stringify(created)}`);
    }
    return { ...server, apiKey, account, user };
  } catch (e) {
    await cleanup();
    if (e instanceof OpenVikingUnavailable) throw e;
    throw new OpenVikingUnavailable(e instanceof Error ? e.message : String(e));
  }
}

/**
 * The server of {@link startRealOpenViking}, or undefined (the reason printed as `SKIP <what>: …`) when it
 * cannot be started here — unless `OPENVIKING_REAL=1`, which makes that a failure.
 */
export async function startRealOrSkip(
  what: string,
  auth: RealAuthMode = "dev",
): Promise<RealOpenViking | undefined> {
  try {
    return await startRealOpenViking(auth);
  } catch (e) {
    if (!(e instanceof OpenVikingUnavailable) || Deno.env.get("OPENVIKING_REAL") === "1") throw e;
    console.log(`SKIP ${what}: ${e.message}`);
    return undefined;
  }
}
