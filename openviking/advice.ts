/** What a failure means for the user and what to do about it, per failure kind: doctor, replay, status. */

import * as z from "zod/mini";
import { FAILURE_KINDS, type OvFailure } from "./client.ts";
import { commandName } from "../lib/self.ts";
import { type Env, processEnv } from "../lib/paths.ts";
import { originOf } from "./config.ts";

/** A failure told to a person: what happened and the fix. */
export type Advice = { summary: string; fix: string };
/** A failure as states and the ledger record it ("local": our own files could not be written). */
export const CauseSchema = z.object({
  kind: z.enum([...FAILURE_KINDS, "local"]),
  status: z.number(),
  message: z.string(),
  code: z.optional(z.string()),
  location: z.optional(z.string()),
});
export type Cause = z.infer<typeof CauseSchema>;
/** `text` ending as a sentence. */
export function asSentence(text: string): string {
  return /[.!?…]$/.test(text) ? text : `${text}.`;
}

/** The cause to record for failure `f` (a redirect's target kept). */
export function causeOf({ kind, status, error: { message, code }, location }: OvFailure): Cause {
  return { kind, status, message, ...(code ? { code } : {}), ...(location ? { location } : {}) };
}

/** Whether `f` is OpenViking refusing a root key on a data route. */
export function isRootKeyRefusal(f: Pick<OvFailure, "kind" | "status" | "error">): boolean {
  return f.kind === "auth" && f.status === 403 && /ROOT API keys cannot access/i.test(f.error.message);
}

/** "; writes wait in the queue until then": how every outage's fix ends. */
const WAIT = "; writes wait in the queue until then";
type Told = Pick<OvFailure, "kind" | "status" | "error" | "location">;
/** Something other than OpenViking answers at the address (`what` it did): check what, then save the right one. */
const somethingElse = (what: string, f: Told, cmd: string): Advice => ({
  summary: `${what}: ${f.error.message}`,
  fix: "check what answers at that address (a proxy's error page? a reverse proxy must forward /api/v1 to " +
    `OpenViking), then \`${cmd} install --url URL\`${WAIT}`,
});
/** How a fix names saving the server's address. */
const saveAddress = (cmd: string) => `save its address: \`${cmd} install --url http://HOST:1933\``;
/** Per failure kind: its summary and fix at `url`, commands named `cmd`. */
const ADVICE: Record<OvFailure["kind"], (f: Told, url: string, cmd: string, env: Env) => Advice> = {
  redirect: (f, url, cmd) => ({
    summary: `${url} redirects${f.location ? ` to ${f.location}` : ""} (HTTP ${f.status}); ` +
      "requests are not sent on, so the key never leaves for another address",
    fix: originOf(f.location ?? "")
      ? `save the address it redirects to: \`${cmd} install --url ${originOf(f.location!)}\``
      : `save the server's real address with \`${cmd} install --url URL\``,
  }),
  "not-openviking": (f, url, cmd) => somethingElse(`${url} is not an OpenViking server`, f, cmd),
  "too-large": (f, url, cmd) => somethingElse(`${url} sent a reply larger than this plugin reads`, f, cmd),
  "missing-route": (f, url) => ({
    summary: `the OpenViking server at ${url} has no such route (HTTP ${f.status}): ${f.error.message}`,
    fix: `upgrade OpenViking (0.5 or newer)${WAIT}`,
  }),
  auth: (f, _, cmd, env) =>
    isRootKeyRefusal(f)
      ? {
        summary: `the server refused the key (HTTP ${f.status}): it is OpenViking's root key, which ` +
          "administers the server and may not use memory",
        fix: `make a user key with it (README: "Server with API keys") and give install that: ` +
          `\`${cmd} install --api-key-stdin\`${WAIT}`,
      }
      : {
        summary: `the server refused the key (HTTP ${f.status}): ${f.error.message}`,
        fix: (env.OPENVIKING_API_KEY
          ? "correct or unset OPENVIKING_API_KEY (set in your environment, it wins over a saved key); or "
          : "") +
          `save your OpenViking user's key: \`${cmd} install --api-key-stdin\` — the server's admin ` +
          "makes one (`ov admin register-user ACCOUNT USER`), or you with the server's root key (README: " +
          `"Server with API keys"); in trusted mode add --account/--user${WAIT}`,
      },
  model: (f, url) => ({
    summary: `OpenViking at ${url} answers, but its model ${
      f.status === 401 || f.status === 403
        ? "refuses the server's requests"
        : f.status >= 503
        ? "is unreachable"
        : "fails"
    }, so search and recall fail (HTTP ${f.status}): "${f.error.message}"`,
    fix: "on the server, check ov.conf's embedding section (embedding.dense: provider, api_base, " +
      "model, api_key): its api_base must answer from the server's machine, its key be valid; then " +
      `restart OpenViking${WAIT}`,
  }),
  server: (f, url) => ({
    summary: `OpenViking at ${url} cannot take requests now (HTTP ${f.status}): ${f.error.message}`,
    fix:
      (f.error.code === "HTTP"
        ? "the answer is not OpenViking's own (a proxy's or gateway's page?): check that OpenViking runs and " +
          "that any proxy in front of it forwards to it (its log says why it could not), then "
        : "") + "check the server's log; writes wait in the queue and are sent when it recovers",
  }),
  rejected: (f, _, cmd) => ({
    summary: `OpenViking refused the request (HTTP ${f.status}): ${f.error.message}`,
    fix: "the write is kept, not sent again on its own: fix what the server says, then " +
      `\`${cmd} replay --rejected\` (doctor's rejected check lists them)`,
  }),
  unreachable: (f, url, cmd, env) =>
    f.error.code === "TIMEOUT" || f.error.code === "SILENT"
      ? {
        summary: `OpenViking at ${url} takes connections but does not answer in time: ${f.error.message}`,
        fix: "check the server's log (a request stuck, the machine overloaded?) or restart it; writes wait " +
          "in the queue until it answers",
      }
      : {
        summary: `OpenViking at ${url} is not reachable: ${f.error.message}`,
        fix: 'start the server (README: "No server yet?"), or ' + (env.OPENVIKING_URL
          ? "correct OPENVIKING_URL (set in your environment, it wins over the saved address), or unset it " +
            `and ${saveAddress(cmd)}`
          : saveAddress(cmd)) +
          WAIT,
      },
};

/** Advice for a failure (or the cause recorded of it) at `baseUrl`; commands named as `env` runs this. */
export function adviceFor(failure: Told | Cause, baseUrl: string, env: Env = processEnv()): Advice {
  if (failure.kind === "local") {
    return { summary: failure.message, fix: "free disk space or fix the permissions of ~/.openviking" };
  }
  const f: Told = "error" in failure
    ? failure
    : { kind: failure.kind, status: failure.status, location: failure.location, error: failure };
  return ADVICE[f.kind](f, baseUrl, commandName(env), env);
}
