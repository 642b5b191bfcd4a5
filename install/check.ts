/** A doctor check, and the server's checks that doctor and install's closing note share. */

import * as z from "zod/mini";
import { adviceFor } from "../openviking/advice.ts";
import { AnyResult, askDataAccess, createClient } from "../openviking/client.ts";
import type { Config } from "../openviking/config.ts";
import { commandName } from "../lib/self.ts";
import { type Env, processEnv } from "../lib/paths.ts";

/** One check: its verdict, a one-line summary, details, and the fix when it is not ok. */
export interface Check {
  id: string;
  status: "ok" | "info" | "warn" | "fail";
  summary: string;
  detail?: string[];
  fix?: string;
}

/** The verdicts of check `id` (`detail` and `fix` only when there are some): `checkOf("hooks").ok("…")`. */
export function checkOf(id: string) {
  const verdict = (status: Check["status"]) => (summary: string, fix?: string, detail?: string[]): Check => ({
    id,
    status,
    summary,
    ...(detail?.length ? { detail } : {}),
    ...(fix ? { fix } : {}),
  });
  return { ok: verdict("ok"), info: verdict("info"), warn: verdict("warn"), fail: verdict("fail") };
}

/** `/health`: OpenViking's says `healthy: true` (or `status: "ok"`), its version and auth mode. */
export const HealthReply = z.looseObject({
  healthy: z.optional(z.unknown()),
  status: z.optional(z.unknown()),
  version: z.optional(z.unknown()),
  auth_mode: z.optional(z.unknown()),
});

/**
 * The server's checks: `/health` answers as OpenViking's does, then a search works with the configured key —
 * or, with `quick` (install's note), only whether the key may use memory's routes.
 */
export async function serverChecks(
  config: Config,
  fetchImpl?: typeof fetch,
  options: { quick?: boolean; env?: Env } = {},
): Promise<Check[]> {
  const env = options.env ?? processEnv();
  const [server, auth] = [checkOf("server"), checkOf("auth")];
  const client = createClient(config, "", { timeoutMs: 5000, fetch: fetchImpl });
  const where = `${config.baseUrl} (from ${config.credentialSource})`;
  const health = await client.request("GET", "/health", HealthReply);
  if (!health.ok) {
    const advice = adviceFor(health, config.baseUrl, env);
    return [server.fail(`${where}: ${advice.summary}`, advice.fix)];
  }
  const h = health.result;
  if (h.healthy !== true && h.status !== "ok") {
    return [server.fail(
      `${where} answers /health, but not as OpenViking does`,
      `check the address (a proxy must forward to OpenViking), then \`${
        commandName(env)
      } install --url URL\``,
    )];
  }
  const version = typeof h.version === "string" && h.version ? `${h.version} ` : "";
  const up = server.ok(`OpenViking ${version}at ${where}`);
  const search = options.quick
    ? await askDataAccess(client)
    : await client.request("POST", "/api/v1/search/find", AnyResult, {
      body: { query: "openviking-kimi doctor", limit: 1 },
    });
  const key = config.apiKey ? `API key from ${config.apiKeySource}` : "no API key";
  if (search.ok || (options.quick && search.kind !== "auth")) {
    return [up, auth.ok(`${options.quick ? "memory's routes answer" : "a search works"} (${key})`)];
  }
  const { summary, fix } = adviceFor(search, config.baseUrl, env);
  // Past the key's check, the search asked the server's embedding model (a provider's 401 is not our key's).
  if (search.kind === "model") {
    return [up, auth.ok(`the server takes the request (${key})`), checkOf("model").fail(summary, fix)];
  }
  const what = options.quick ? "memory's routes refuse the key" : "a search failed";
  return [up, auth.fail(`${what} (${key}): ${summary}`, fix)];
}
