/** What passes the proxy: JSON walked without recursion and to a bounded depth, its strings mapped. Pure. */

// @ts-types="@modelcontextprotocol/sdk/types"
import type {
  JSONRPCError,
  JSONRPCMessage,
  JSONRPCRequest,
  JSONRPCResponse,
} from "@modelcontextprotocol/sdk/types.js";
import { isRecord } from "../lib/parsed.ts";
import { neutralize } from "../lib/neutralize.ts";
import { redactField } from "../lib/redact.ts";

/** The deepest nesting of arrays and objects walked (no MCP message a client uses comes near it), and past it. */
export const [MAX_DEPTH, TOO_DEEP] = [256, Symbol("too deep")];

/** How a walk maps strings: a string value (under `key`, in a container under `parent`), and a key. */
type StringMap = { value(text: string, key: string, parent: string): string; key?(text: string): string };

/** `value` copied with every string mapped (an array's items under its key), without recursion; past MAX_DEPTH, TOO_DEEP. */
export function mapStrings(value: unknown, map: StringMap, key = "", parent = ""): unknown {
  type Slot = Record<string | number, unknown>;
  type Task = { from: unknown; to: Slot; at: string | number; key: string; parent: string; depth: number };
  const root: Slot = {};
  const stack: Task[] = [{ from: value, to: root, at: 0, key, parent, depth: 0 }];
  for (let task = stack.pop(); task; task = stack.pop()) {
    const { from, to, at, depth } = task;
    if (typeof from === "string") to[at] = map.value(from, task.key, task.parent);
    else if (!Array.isArray(from) && !isRecord(from)) to[at] = from;
    else if (depth >= MAX_DEPTH) return TOO_DEEP;
    else if (Array.isArray(from)) {
      const out = to[at] = new Array(from.length) as unknown as Slot;
      from.forEach((x, i) => stack.push({ ...task, from: x, to: out, at: i, depth: depth + 1 }));
    } else {
      const entries = Object.entries(from).map(([k, x]) => [map.key ? map.key(k) : k, k, x] as const);
      // Keys made as data properties (a "__proto__" key stays a key), then filled in.
      const out = to[at] = Object.fromEntries(entries.map(([k]) => [k, undefined])) as Slot;
      for (const [k, original, x] of entries) {
        stack.push({ from: x, to: out, at: k, key: original, parent: task.key, depth: depth + 1 });
      }
    }
  }
  return root[0];
}

/** Base64 content (an image's `data`, a resource's `blob`): what neutralising leaves as it is, so skipped. */
const BASE64 = /^[\w+/=\n-]*$/;

/** `message` neutralised but what a tool list's calls must match (`catalog`); `undefined`: too deep. */
export function neutralized<T extends JSONRPCMessage>(message: T, catalog: boolean): T | undefined {
  const verbatim = (key: string, parent: string) =>
    catalog && (key === "pattern" || key === "name" && parent === "tools");
  const map: StringMap = {
    value: (v, key, parent) => verbatim(key, parent) || BASE64.test(v) ? v : neutralize(v),
    key: catalog ? undefined : neutralize,
  };
  const out: Record<string, unknown> = { ...message };
  for (const k of ["result", "error", "params"]) if (k in out) out[k] = mapStrings(out[k], map, k);
  return Object.values(out).includes(TOO_DEEP) ? undefined : out as T;
}

/** The params of each request the model's words ride upstream in, redacted (a completion's `context` holds the prompt's arguments so far). */
export const REDACTED_PARAMS: Readonly<Record<string, readonly string[]>> = {
  "tools/call": ["arguments"],
  "prompts/get": ["arguments"],
  "completion/complete": ["argument", "context"],
};

/** `values` with every string redacted as a field of its key: learned from all first (as capture's plan does, so the walk's order hides nothing), then hidden, with `prints` too. */
function redactedValues(values: readonly unknown[], prints?: ReadonlySet<string>): unknown[] | undefined {
  const seen = new Set<string>();
  for (const v of values) mapStrings(v, { value: (s, key) => redactField(key, s, seen) });
  const out = values.map((v) => mapStrings(v, { value: (s, key) => redactField(key, s, seen, prints) }));
  return out.includes(TOO_DEEP) ? undefined : out;
}

/**
 * The model's or user's words in `message` redacted like captured text, `prints` too: a request's
 * {@link REDACTED_PARAMS}, or a client's reply to a server's request (sampling, elicitation). `undefined`: too deep.
 */
export function redacted<T extends JSONRPCRequest | JSONRPCResponse | JSONRPCError>(
  message: T,
  prints?: ReadonlySet<string>,
): T | undefined {
  const isRequest = "method" in message;
  const holder = (isRequest ? message.params : message) as Record<string, unknown> | undefined;
  const named = !isRequest
    ? ["result" in message ? "result" : "error"]
    : Object.hasOwn(REDACTED_PARAMS, message.method)
    ? REDACTED_PARAMS[message.method]
    : [];
  const keys = named.filter((k) => isRecord(holder) && k in holder);
  if (!isRecord(holder) || keys.length === 0) return message;
  const values = redactedValues(keys.map((k) => holder[k]), prints);
  if (!values) return undefined;
  const fields = { ...holder, ...Object.fromEntries(keys.map((k, i) => [k, values[i]])) };
  return (isRequest ? { ...message, params: fields } : fields) as T;
}
