/** The hook table: one row per Kimi event, how the hook process runs it and how install registers it. */

/**
 * One hook event: Kimi's name, our CLI's, Kimi's `matcher` and `timeout` (s); traits: `detached` (a worker runs
 * it), `stateful` (nothing without a home), `captures` (stops when its state is unwritable), `ledger`.
 */
type HookSpec = { event: string; cli: string; matcher?: string; timeout: number; traits: readonly Trait[] };
type Trait = "detached" | "stateful" | "captures" | "ledger";

/** Where a detached capture runs: a worker of its own, recording what it sent. */
const WORKER = ["detached", "stateful", "captures", "ledger"] as const;

/** The hooks, in registration order. */
export const HOOKS = [
  { event: "SessionStart", cli: "session-start", timeout: 10, traits: ["stateful", "ledger"] },
  { event: "UserPromptSubmit", cli: "user-prompt-submit", timeout: 20, traits: ["ledger"] },
  { event: "PreToolUse", cli: "pre-tool-use", matcher: "Read|Glob|Grep", timeout: 5, traits: [] },
  { event: "Stop", cli: "stop", timeout: 10, traits: WORKER },
  { event: "StopFailure", cli: "stop-failure", timeout: 10, traits: WORKER },
  { event: "PreCompact", cli: "pre-compact", timeout: 10, traits: WORKER },
  { event: "SessionEnd", cli: "session-end", timeout: 10, traits: WORKER },
  { event: "Interrupt", cli: "interrupt", timeout: 5, traits: ["stateful", "captures", "ledger"] },
] as const satisfies readonly HookSpec[];

/** One of the handled events, by its CLI name. */
export type HookEvent = (typeof HOOKS)[number]["cli"];

/** The events this program handles, by their CLI names. */
export const HOOK_EVENTS: readonly HookEvent[] = HOOKS.map((h) => h.cli);

/** Whether the event of CLI name `cli` has `trait`. */
export const hasTrait = (cli: string, trait: Trait): boolean =>
  HOOKS.some((h) => h.cli === cli && h.traits.some((t) => t === trait));

/** Whether a string names a handled event. */
export const isHookEvent = (name: string | undefined): name is HookEvent =>
  (HOOK_EVENTS as readonly string[]).includes(name ?? "");
