/**
 * Where install takes the API key from, so that it is never on screen or in shell history:
 * `--api-key-stdin` (the first line of stdin), `OPENVIKING_API_KEY` in install's environment, or a prompt
 * on a terminal that does not echo — asked when `--url` is given and no key is saved for that address yet
 * (Enter for none); a key saved for it is kept. `--api-key KEY` still works, with a warning: the key is then
 * on the command line (and in the "Task …" line `deno task` without -q prints).
 */

import { originOf } from "../openviking/config.ts";
import type { Env } from "../lib/paths.ts";
import { savedConnection } from "./ovcli.ts";

/** How the key was asked for on the command line. */
export interface KeyFlags {
  /** `--api-key KEY` ("" deletes the saved key). */
  apiKey: string | undefined;
  /** `--api-key-stdin`. */
  apiKeyStdin: boolean;
  /** `--url`, when given. */
  url: string | undefined;
  dryRun: boolean;
}

/** The terminal and stdin, injectable for tests. */
export interface KeyIo {
  env: Env;
  /** Whether stdin is a terminal. */
  stdinIsTerminal(): boolean;
  /** All of stdin. */
  readStdin(): Promise<Uint8Array>;
  /** Asks `question` on the terminal without echoing the answer; undefined when cancelled (Ctrl-C). */
  askHidden(question: string): Promise<string | undefined>;
  warn(line: string): void;
}

/** The key to save (undefined: leave the saved one as it is) and where it came from, or why there is none. */
export type KeyChoice =
  | { ok: true; apiKey?: string; from?: string }
  | { ok: false; error: string };

/** The first line of what came on stdin, without its line end and surrounding blanks. */
function firstLine(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes).split(/\r?\n/)[0].trim();
}

/** Whether ovcli.conf holds a key saved for `url`'s server (then a terminal is not asked for one). */
async function savedKeyFor(env: Env, url: string): Promise<boolean> {
  const saved = await savedConnection(env);
  return saved.apiKey !== "" && originOf(saved.url) === originOf(url.trim());
}

/** Chooses the API key install saves, from the flags, stdin, the environment or a hidden prompt. */
export async function chooseApiKey(flags: KeyFlags, io: KeyIo): Promise<KeyChoice> {
  if (flags.apiKeyStdin && flags.apiKey !== undefined) {
    return { ok: false, error: "give the API key one way: --api-key-stdin or --api-key, not both" };
  }
  if (flags.apiKey !== undefined) {
    if (flags.apiKey !== "") {
      // Deno's own "Task install …" line echoes every argument: nothing here can stop it, so it is named.
      io.warn(
        "Warning: --api-key puts the key on the command line, where your shell history and the process list " +
          "keep it (and if you ran `deno task install` without -q, Deno has printed it too, in its " +
          '"Task install …" line). Next time use --api-key-stdin: it reads the key from a pipe (`< keyfile`) ' +
          "or, on a terminal, asks for it without showing what you type; or set OPENVIKING_API_KEY.",
      );
    }
    return { ok: true, apiKey: flags.apiKey, from: "--api-key" };
  }
  if (flags.apiKeyStdin) {
    if (io.stdinIsTerminal()) return await ask(io, flags.url, true);
    const key = firstLine(await io.readStdin());
    if (!key) {
      return {
        ok: false,
        error: "--api-key-stdin: nothing came on stdin; pipe the key in, e.g. `< keyfile`",
      };
    }
    return { ok: true, apiKey: key, from: "stdin" };
  }
  const fromEnv = io.env.OPENVIKING_API_KEY?.trim();
  if (fromEnv) return { ok: true, apiKey: fromEnv, from: "OPENVIKING_API_KEY" };
  if (
    flags.url && flags.url.trim() !== "" && !flags.dryRun && io.stdinIsTerminal() &&
    !(await savedKeyFor(io.env, flags.url))
  ) {
    return await ask(io, flags.url, false);
  }
  return { ok: true };
}

/** Asks the terminal for the key; `required` when the user asked for it with --api-key-stdin. */
async function ask(io: KeyIo, url: string | undefined, required: boolean): Promise<KeyChoice> {
  const where = url ? ` for ${url.replace(/\/\/[^/@]*@/, "//")}` : "";
  const answer = await io.askHidden(
    `OpenViking API key${where} (a user key, or the server's root key to make one; not shown as you type; ` +
      `Enter ${required ? "to cancel" : "for none"}): `,
  );
  if (answer === undefined) return { ok: false, error: "cancelled; nothing was changed" };
  if (answer === "") {
    return required ? { ok: false, error: "no API key given; nothing was changed" } : { ok: true };
  }
  return { ok: true, apiKey: answer, from: "the terminal" };
}

/** Removes the last UTF-8 character of `bytes` (a backspace). */
function dropLastChar(bytes: number[]): void {
  while (bytes.length && (bytes[bytes.length - 1] & 0xc0) === 0x80) bytes.pop();
  bytes.pop();
}

/** Asks on the terminal without echo (raw mode): Enter ends, Backspace and Ctrl-U edit, Ctrl-C cancels. */
export async function askHiddenOnTerminal(question: string): Promise<string | undefined> {
  const encoder = new TextEncoder();
  const bytes: number[] = [];
  let cancelled = false;
  // Echo off before the question shows: a key typed (or pasted) the moment it appears is never echoed.
  Deno.stdin.setRaw(true);
  try {
    await Deno.stderr.write(encoder.encode(question));
    const buf = new Uint8Array(256);
    reading: for (;;) {
      const n = await Deno.stdin.read(buf);
      if (n === null) break;
      for (const b of buf.subarray(0, n)) {
        if (b === 13 || b === 10) break reading;
        if (b === 3 || (b === 4 && bytes.length === 0)) {
          cancelled = b === 3;
          break reading;
        }
        if (b === 127 || b === 8) dropLastChar(bytes);
        else if (b === 21) bytes.length = 0;
        else if (b >= 32) bytes.push(b);
      }
    }
  } finally {
    Deno.stdin.setRaw(false);
    await Deno.stderr.write(encoder.encode("\n"));
  }
  return cancelled ? undefined : new TextDecoder().decode(new Uint8Array(bytes)).trim();
}
