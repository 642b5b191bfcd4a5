/**
 * The hook events, defined once: Kimi's name and ours, how the hook process runs the event, what it keeps,
 * and how install registers it. The CLI's event names, the events whose parent detaches a worker, the
 * dispatcher's stateful and capturing events and every `[[hooks]]` / manifest entry come from this table.
 * Pure data: the lean detach path of `hook <event>` loads it and nothing else.
 *
 * Timeouts (Kimi `timeout`, whole seconds): the prompt hook works inside OPENVIKING_PROMPT_BUDGET_MS (20, well
 * above its default); interrupt inside 2 s (5); the stop / stop-failure / pre-compact / session-end parents
 * return at once and detach a worker, and session-start detaches its queue replay (10 is ample for a parent
 * that only spawns, and bounds a stall); the `viking://` guard is local (5). StopFailure is what Kimi fires
 * instead of Stop when a turn fails.
 */

/** One hook event. */
export interface HookSpec {
  /** Kimi's event name. */
  readonly event: string;
  /** Our CLI's event argument (`openviking-kimi hook <cli>`). */
  readonly cli: string;
  /** Kimi `matcher` (a JS RegExp source), when the hook is limited to some tools. */
  readonly matcher?: string;
  /** Kimi `timeout` in whole seconds: the hook's own time budget plus start-up headroom. */
  readonly timeout: number;
  /** The parent only hands stdin to a detached worker and exits (hooks/detach.ts). */
  readonly detached: boolean;
  /** Keeps state or uses the queue: without a home it does nothing. */
  readonly stateful: boolean;
  /** Sends what the capture state must record: it stops before sending when that state cannot be written. */
  readonly captures: boolean;
  /** What a run did goes into the session's ledger, for `status` (the local viking:// guard's runs do not). */
  readonly ledger: boolean;
}

/** The hooks, in registration order. */
export const HOOKS = [
  {
    event: "SessionStart",
    cli: "session-start",
    timeout: 10,
    detached: false,
    stateful: true,
    captures: false,
    ledger: true,
  },
  {
    event: "UserPromptSubmit",
    cli: "user-prompt-submit",
    timeout: 20,
    detached: false,
    stateful: false,
    captures: false,
    ledger: true,
  },
  {
    event: "PreToolUse",
    cli: "pre-tool-use",
    matcher: "Read|Glob|Grep",
    timeout: 5,
    detached: false,
    stateful: false,
    captures: false,
    ledger: false,
  },
  { event: "Stop", cli: "stop", timeout: 10, detached: true, stateful: true, captures: true, ledger: true },
  {
    event: "StopFailure",
    cli: "stop-failure",
    timeout: 10,
    detached: true,
    stateful: true,
    captures: true,
    ledger: true,
  },
  {
    event: "PreCompact",
    cli: "pre-compact",
    timeout: 10,
    detached: true,
    stateful: true,
    captures: true,
    ledger: true,
  },
  {
    event: "SessionEnd",
    cli: "session-end",
    timeout: 10,
    detached: true,
    stateful: true,
    captures: true,
    ledger: true,
  },
  {
    event: "Interrupt",
    cli: "interrupt",
    timeout: 5,
    detached: false,
    stateful: true,
    captures: true,
    ledger: true,
  },
] as const satisfies readonly HookSpec[];

/** One of the handled events, by its CLI name. */
export type HookEvent = (typeof HOOKS)[number]["cli"];

/** The events this program handles, by their CLI names. */
export const HOOK_EVENTS: readonly HookEvent[] = HOOKS.map((h) => h.cli);

/** The CLI names of the events whose `flag` is set. */
function eventsWhere(flag: "detached" | "stateful" | "captures" | "ledger"): ReadonlySet<string> {
  return new Set(HOOKS.filter((h) => h[flag]).map((h) => h.cli));
}

/** Events whose work runs in a detached worker. */
export const DETACHED_EVENTS = eventsWhere("detached");

/** Events that keep state (and the queue): without a home they do nothing. */
export const STATEFUL_EVENTS = eventsWhere("stateful");

/** Events that send what the capture state must record. */
export const CAPTURING_EVENTS = eventsWhere("captures");

/** Events whose runs the ledger records. */
export const LEDGER_EVENTS = eventsWhere("ledger");

/** Whether a string names a handled event. */
export function isHookEvent(name: string | undefined): name is HookEvent {
  return (HOOK_EVENTS as readonly string[]).includes(name ?? "");
}
