/** Configuration: credentials by the other plugins' precedence, every knob from every source, workspace rules. */

import { commandName } from "../lib/self.ts";
import { assertEquals, assertMatch, assertStringIncludes } from "../tests/support/assert.ts";
import {
  type ConfigSources,
  keyFor,
  KNOBS,
  loadConfig,
  resolveConfig,
  resolveSettings,
  type Settings,
} from "./config.ts";
import { tempDir } from "../tests/support/temp.ts";

function sources(partial: Partial<ConfigSources>): ConfigSources {
  return {
    env: {},
    cliConfigPath: "/h/.openviking/ovcli.conf",
    ovConfigPath: "/h/.openviking/ov.conf",
    ...partial,
  };
}

const OVCLI = {
  url: "http://cli.example:1933",
  api_key: "cli-key",
  account: "cli-acct",
  user: "cli-user",
  actor_peer_id: "cli-peer",
};
const OVCONF = {
  server: { host: "0.0.0.0", port: 2000, root_api_key: "root-key" },
  kimicode: { apiKey: "ov-key", accountId: "ov-acct", userId: "ov-user", peerId: "ov-peer" },
};

const CLI = "http://cli.example:1933";
const LOCAL = (port: number) => `http://127.0.0.1:${port}`;
type Sources = { env?: Record<string, string>; ovcli?: unknown; ovconf?: unknown };
/** [what, the sources, the fields of the resolved config it must have]. */
// deno-fmt-ignore: one case a line, a table
const PRECEDENCE: [string, Sources, Record<string, string>][] = [
  ["ov.conf only: 0.0.0.0 → loopback, its key and identity", { ovconf: OVCONF }, { baseUrl: LOCAL(2000), apiKey: "ov-key", account: "ov-acct", user: "ov-user", peerId: "ov-peer" }],
  ["ov.conf server.url wins over host/port", { ovconf: { server: { url: "https://ov.example/", port: 1 } } }, { baseUrl: "https://ov.example", apiKey: "" }],
  ["ov.conf's root_api_key is no client's key", { ovconf: { server: { root_api_key: "r" } } }, { apiKey: "", apiKeySource: "none", baseUrl: LOCAL(1933) }],
  ["ovcli.conf beats ov.conf", { ovcli: OVCLI, ovconf: OVCONF }, { baseUrl: CLI, apiKey: "cli-key", account: "cli-acct", user: "cli-user", peerId: "cli-peer", credentialSource: "ovcli.conf" }],
  ["ovcli.conf alone decides", { ovcli: { url: "http://cli:1" }, ovconf: OVCONF }, { apiKey: "", account: "", user: "" }],
  ["an env credential: env, then files", { env: { OPENVIKING_API_KEY: "e" }, ovcli: OVCLI }, { baseUrl: CLI, apiKey: "e", account: "cli-acct", credentialSource: "ovcli.conf" }],
  ["env URL beats ovcli's; its key stays home", { env: { OPENVIKING_URL: "http://e:9/" }, ovcli: OVCLI }, { baseUrl: "http://e:9", apiKey: "", apiKeySource: "none", credentialSource: "env" }],
  ["env URL at ovcli.conf's origin: its key goes", { env: { OPENVIKING_URL: `${CLI}/` }, ovcli: OVCLI }, { apiKey: "cli-key", apiKeyOrigin: CLI }],
  ["ovcli.conf without url: key for the files' address", { env: { OPENVIKING_URL: LOCAL(2000) }, ovcli: { api_key: "k" }, ovconf: { server: { port: 2000 } } }, { apiKey: "k", apiKeySource: "ovcli.conf" }],
  ["an env key goes wherever this run goes", { env: { OPENVIKING_URL: "http://e:9", OPENVIKING_API_KEY: "e" }, ovcli: OVCLI }, { apiKey: "e", apiKeyOrigin: "" }],
  ["OPENVIKING_BASE_URL", { env: { OPENVIKING_BASE_URL: "http://b.example" } }, { baseUrl: "http://b.example", mcpUrl: "http://b.example/mcp" }],
  ["env identity beats files", { env: { OPENVIKING_ACCOUNT: "ea", OPENVIKING_USER: "eu", OPENVIKING_PEER_ID: "ep" }, ovcli: OVCLI, ovconf: OVCONF }, { account: "ea", user: "eu", peerId: "ep" }],
  ["explicit MCP URL", { env: { OPENVIKING_MCP_URL: "http://mcp.example/x" } }, { mcpUrl: "http://mcp.example/x", baseUrl: LOCAL(1933) }],
  ["OPENVIKING_CREDENTIAL_SOURCE is not read: env first", { env: { OPENVIKING_CREDENTIAL_SOURCE: "ovcli", OPENVIKING_URL: "http://e:1" }, ovcli: OVCLI }, { baseUrl: "http://e:1", credentialSource: "env" }],
];

Deno.test("credentials: precedence table env vs ovcli.conf vs ov.conf", () => {
  for (const [name, { env = {}, ovcli, ovconf }, expect] of PRECEDENCE) {
    const { config } = resolveConfig(sources({ env, ovcli, ovconf }));
    const got = Object.fromEntries(
      Object.keys(expect).map((k) => [k, (config as unknown as Record<string, unknown>)[k]]),
    );
    assertEquals(got, expect, name);
  }
});

Deno.test("credentials: a key withheld from another origin is said, and keyFor keeps it off another MCP URL", () => {
  const moved = resolveConfig(sources({ env: { OPENVIKING_URL: "http://env.example:9" }, ovcli: OVCLI }));
  assertEquals(moved.warnings, [
    "the API key in ovcli.conf was saved for http://cli.example:1933; it is not sent to http://env.example:9: " +
    "give that server's key in OPENVIKING_API_KEY, or save it with " +
    `\`${commandName()} install --url URL --api-key-stdin\``,
  ]);
  const mcp = resolveConfig(sources({ env: { OPENVIKING_MCP_URL: "http://mcp.example/mcp" }, ovcli: OVCLI }));
  assertEquals([mcp.config.apiKey, mcp.config.baseUrl], ["cli-key", "http://cli.example:1933"]);
  assertEquals(keyFor(mcp.config, mcp.config.mcpUrl), "", "not sent to the MCP URL of another origin");
  assertEquals(keyFor(mcp.config, mcp.config.baseUrl), "cli-key");
  assertMatch(
    mcp.warnings.join(),
    /saved for http:\/\/cli\.example:1933; it is not sent to http:\/\/mcp\.example\/mcp/,
  );
  const env = resolveConfig(
    sources({ env: { OPENVIKING_API_KEY: "e", OPENVIKING_MCP_URL: "http://mcp.example/mcp" } }),
  );
  assertEquals(keyFor(env.config, env.config.mcpUrl), "e", "an env key is given for this run's addresses");
});

Deno.test("credentials: a bad URL is reported and the default used; a URL's user info is dropped, unprinted", () => {
  const { config, warnings } = resolveConfig(sources({ env: { OPENVIKING_URL: "ftp://nope" } }));
  assertEquals(config.baseUrl, "http://127.0.0.1:1933");
  assertStringIncludes(warnings.join("\n"), "not an http(s) URL");
  const userinfo = resolveConfig(sources({ env: { OPENVIKING_URL: "http://u:pw@h:1/x/" } }));
  assertEquals([userinfo.config.baseUrl, userinfo.warnings.join().includes("pw")], ["http://h:1/x", false]);
  assertStringIncludes(
    userinfo.warnings.join(),
    "carries a user name or password (http://h:1/x/); it is ignored",
  );
});

Deno.test("removed variables: one warning for an earlier version's; a knob that became a constant is unknown", () => {
  const env = {
    OPENVIKING_CREDENTIALS_SOURCE: "env",
    OPENVIKING_PEER_SOURCE: "none",
    OPENVIKING_SCORE_THRESHOLD: "0.9",
    OPENVIKING_MCP_TOOLS: "all",
  };
  const { config, warnings } = resolveConfig(sources({ env }));
  assertEquals(config.workspacePeer, true);
  assertEquals(warnings, [
    "no longer read (README: Configuration): OPENVIKING_CREDENTIALS_SOURCE, OPENVIKING_PEER_SOURCE",
  ]);
  const files = resolveConfig(sources({
    ovcli: { plugin: { kimicode: { recallLimit: 20, scoreThreshold: 0.9 } } },
    workspace: [{ path: "/w/.openviking/config.json", value: { recallFormat: "full", mcpTools: ["all"] } }],
  }));
  assertEquals([files.warnings, "scoreThreshold" in files.config], [[], false]);
});

Deno.test("defaults when nothing is configured: the local server, no identity, every knob's default", () => {
  const { config, warnings } = resolveConfig(sources({ env: { HOME: "/h" } }));
  assertEquals([config.baseUrl, config.mcpUrl], ["http://127.0.0.1:1933", "http://127.0.0.1:1933/mcp"]);
  assertEquals([config.apiKey, config.account, config.user, config.peerId], ["", "", "", ""]);
  assertEquals([config.credentialSource, warnings], ["default", []]);
  for (const [name, knob] of Object.entries(KNOBS)) {
    if (name === "debugLogPath") continue;
    assertEquals((config as unknown as Record<string, unknown>)[name], knob.default, name);
  }
  const log = "/h/.openviking/logs/kimicode-hooks.log";
  assertEquals([config.debugLogPath, config.userAgent], [log, "openviking-memory-kimicode/0.1.0"]);
});

Deno.test("knobs: env > workspace local > workspace > ovcli plugin.kimicode (the shared plugin: only an off, warned)", () => {
  const ovcli = {
    plugin: { captureWaitMs: 2000, autoCapture: false, kimicode: { captureWaitMs: 3000, timeoutMs: 4000 } },
  };
  const base = sources({ ovcli });
  let { config, warnings } = resolveConfig(base);
  assertEquals([config.captureWaitMs, config.autoCapture, config.timeoutMs], [3000, false, 4000]);
  assertStringIncludes(warnings.join(), 'ovcli.conf plugin "autoCapture" is read from plugin.kimicode only');
  const ws = (...values: unknown[]) => values.map((value, i) => ({ path: `/w/config${i}.json`, value }));
  ({ config } = resolveConfig({
    ...base,
    workspace: ws({ captureWaitMs: 2000 }, { captureWaitMs: 1000, autoRecall: false }),
  }));
  assertEquals([config.captureWaitMs, config.autoRecall], [2000, false]);
  ({ config } = resolveConfig({
    ...base,
    env: { OPENVIKING_CAPTURE_WAIT_MS: "6000" },
    workspace: ws({ captureWaitMs: 2000 }),
  }));
  assertEquals(config.captureWaitMs, 6000);
  const bad = resolveConfig({ ...base, workspace: ws({ captureWaitMs: "x" }) });
  assertEquals(bad.config.captureWaitMs, 3000, "a bad workspace value leaves the user's own");
  assertEquals(
    bad.warnings.at(-1),
    '/w/config0.json "captureWaitMs": invalid value "x" (expected number); ignored',
  );
});

Deno.test("loadConfig reads files and honours path overrides", async () => {
  await using dir = await tempDir();
  const cli = `${dir.path}/custom-ovcli.json`;
  await Deno.writeTextFile(cli, JSON.stringify({ url: "http://from-file:1", api_key: "k1" }));
  const { config, warnings } = await loadConfig({ HOME: dir.path, OPENVIKING_CLI_CONFIG_FILE: cli });
  assertEquals([config.baseUrl, config.apiKey, config.cliConfigPath, warnings], [
    "http://from-file:1",
    "k1",
    cli,
    [],
  ]);
});

Deno.test("loadConfig: broken JSON is a warning", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/.openviking`);
  await Deno.writeTextFile(`${dir.path}/.openviking/ovcli.conf`, "{not json");
  const res = await loadConfig({ HOME: dir.path });
  assertEquals(res.config.baseUrl, "http://127.0.0.1:1933");
  assertStringIncludes(res.warnings.join("\n"), "not valid JSON");
});

Deno.test("loadConfig without a home reads no file: not the cwd's .openviking/, not a workspace file", async () => {
  await using dir = await tempDir();
  const ws = `${dir.path}/repo`;
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  for (const name of ["ovcli.conf", "ov.conf", "config.json", "config.local.json"]) {
    const evil = {
      url: "http://evil:1",
      api_key: "evil",
      captureWaitMs: 3000,
      server: { url: "http://evil:2" },
    };
    await Deno.writeTextFile(`${ws}/.openviking/${name}`, JSON.stringify(evil));
  }
  const cwd = Deno.cwd();
  Deno.chdir(ws); // even with the process in the repository, nothing resolves against it
  try {
    const { config, warnings } = await loadConfig({ OPENVIKING_URL: "http://user:1933" }, ws);
    assertEquals(
      [config.baseUrl, config.apiKey, config.captureWaitMs, config.debugLogPath],
      ["http://user:1933", "", 10_000, ""],
    );
    assertEquals(warnings, []);
    const bare = await loadConfig({}, ws);
    assertEquals([bare.config.baseUrl, bare.config.apiKey], ["http://127.0.0.1:1933", ""]);
  } finally {
    Deno.chdir(cwd);
  }
});

Deno.test("loadConfig with a home: workspace files set knobs only — never a URL, a key, an identity or the log path", async () => {
  await using dir = await tempDir();
  const ws = `${dir.path}/repo`;
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  const fields = ["url", "baseUrl", "mcpUrl", "api_key", "apiKey", "account", "user", "peerId"];
  const hostile = Object.fromEntries(fields.map((k) => [k, "http://evil:1"]));
  Object.assign(hostile, { debugLogPath: "/etc/evil.log", captureWaitMs: 3000 });
  await Deno.writeTextFile(`${ws}/.openviking/config.json`, JSON.stringify(hostile));
  await Deno.writeTextFile(`${ws}/.openviking/config.local.json`, JSON.stringify(hostile));
  await Deno.writeTextFile(
    `${ws}/.openviking/ovcli.conf`,
    JSON.stringify({ url: "http://evil:3", api_key: "e" }),
  );
  await Deno.writeTextFile(`${ws}/.openviking/ov.conf`, JSON.stringify({ server: { url: "http://evil:4" } }));
  const { config, warnings } = await loadConfig({ HOME: `${dir.path}/home` }, ws);
  assertEquals(
    [config.baseUrl, config.mcpUrl, config.apiKey, config.account, config.user, config.peerId],
    ["http://127.0.0.1:1933", "http://127.0.0.1:1933/mcp", "", "", "", ""],
  );
  assertEquals(config.debugLogPath, `${dir.path}/home/.openviking/logs/kimicode-hooks.log`);
  assertEquals(config.captureWaitMs, 3000, "knobs still apply");
  assertMatch(
    warnings.join("\n"),
    /config\.json: "url" is ignored \(a workspace file may not set it\); put it in ~\/\.openviking\/ovcli\.conf/,
  );
  assertMatch(
    warnings.join("\n"),
    /"debugLogPath": "\/etc\/evil\.log" is ignored: a workspace file may not set it/,
  );
});

Deno.test("loadConfig: a relative debug log path or override is ignored with a warning", async () => {
  const { config, warnings } = await loadConfig({
    HOME: "/h",
    OPENVIKING_DEBUG_LOG: "logs/x.log",
    OPENVIKING_CLI_CONFIG_FILE: "ovcli.conf",
  });
  const defaults = ["/h/.openviking/logs/kimicode-hooks.log", "/h/.openviking/ovcli.conf"];
  assertEquals([config.debugLogPath, config.cliConfigPath], defaults);
  assertMatch(warnings.join("\n"), /OPENVIKING_CLI_CONFIG_FILE=ovcli.conf is not an absolute path/);
  assertMatch(warnings.join("\n"), /debug log path "logs\/x.log" is not an absolute path/);
});

type Name = keyof typeof KNOBS;

/**
 * A knob's parser at its edges: [knob, where it is set, the value, what it resolves to, why it is refused].
 * A refused value warns once and leaves the default (an optional knob: absent).
 */
// deno-fmt-ignore: one case a line, a table
const PARSES: [Name, "env" | "file", unknown, unknown, string?][] = [
  ...[["1", true], ["0", false], ["TRUE", true], [" yes ", true], ["On", true], ["OFF", false]].map(([raw, want]): [Name, "env", unknown, unknown] => ["enabled", "env", raw, want]),
  ["redact", "file", false, false],
  ...["maybe", 1, 0, "", [], { a: 1 }].map((raw): [Name, "file", unknown, unknown, string] => ["enabled", "file", raw, true, "expected boolean"]),
  ["captureWaitMs", "env", " 700 ", 700],
  ["captureWaitMs", "env", "0x400", 1024],
  ["captureWaitMs", "file", 0, 0],
  ["captureWaitMs", "file", 600_000, 600_000],
  ["captureWaitMs", "file", -1, 10_000, "must be at least 0"],
  ["captureWaitMs", "file", 600_001, 10_000, "must be at most 600000"],
  ["captureWaitMs", "file", "1e6", 10_000, "must be at most 600000"],
  ["captureWaitMs", "file", 250.5, 10_000, "expected int"],
  ["captureWaitMs", "file", "250.5", 10_000, "expected int"],
  ...["lots", "", " ", "Infinity", "NaN", "1_000", true, [5]].map((raw): [Name, "file", unknown, unknown, string] => ["captureWaitMs", "file", raw, 10_000, "expected number"]),
  ["captureWaitMs", "file", 1e20, 10_000, "must be at most 600000"],
  ["idleCommitSeconds", "env", "0.5", 0.5],
  ["idleCommitSeconds", "file", 0.1, 0.1],
  ["idleCommitSeconds", "file", 86_401, 300, "must be at most 86400"],
  ["idleCommitSeconds", "file", 0, 300, "must be at least 0.1"],
  ["idleCommitSeconds", "file", "-Infinity", 300, "expected number"],
  ["recallPeerScope", "env", " Actor ", "actor"],
  ...["svn", 1, ["all"], ""].map((raw): [Name, "file", unknown, unknown, string] => ["recallPeerScope", "file", raw, "all", 'must be "all" or "actor" or "strict"']),
  ["bypassSessionPatterns", "env", "a*, /tmp/** , ,", ["a*", "/tmp/**"]],
  ["bypassSessionPatterns", "file", "", []],
  ["bypassSessionPatterns", "file", [" a "], [" a "]],
  ["bypassSessionPatterns", "file", ["a", 2], [], "expected string"],
  ["bypassSessionPatterns", "file", 5, [], "expected array"],
  ["debugLogPath", "file", 5, "/h/.openviking/logs/kimicode-hooks.log", "expected string"],
  ["debugLogPath", "file", "", "/h/.openviking/logs/kimicode-hooks.log", "needs at least 1 character"],
];

Deno.test("knobs: each kind of knob parses its words and bounds; a refused value warns and leaves the default", () => {
  for (const [name, where, raw, want, why] of PARSES) {
    const warnings: string[] = [];
    const env = { HOME: "/h", ...(where === "env" ? { [KNOBS[name].env]: raw as string } : {}) };
    const ovcli = where === "file" ? { plugin: { kimicode: { [name]: raw } } } : undefined;
    const s = resolveSettings({ env, ovcli }, warnings) as Record<string, unknown>;
    const shown = JSON.stringify(raw);
    const said = why
      ? [`ovcli.conf plugin.kimicode "${name}": invalid value ${shown} (${why}); using the default`]
      : [];
    assertEquals([s[name], name in s, warnings], [want, want !== undefined, said], `${name} ${shown}`);
  }
  const a = resolveSettings({ env: {} }).bypassSessionPatterns;
  a.push("x");
  assertEquals(
    resolveSettings({ env: {} }).bypassSessionPatterns,
    [],
    "each resolution gets its own default",
  );
});

Deno.test("knobs: every bad value gives one warning, in the table's order; the good ones still apply", () => {
  const env = Object.fromEntries(Object.values(KNOBS).map((k) => [k.env, "bogus"]));
  env.OPENVIKING_CAPTURE_WAIT_MS = "700";
  const warnings: string[] = [];
  const s: Settings = resolveSettings({ env }, warnings);
  assertEquals(s.captureWaitMs, 700);
  const named = warnings.filter((w) => w.startsWith("OPENVIKING_")).map((w) => w.slice(0, w.indexOf(":")));
  const expected = Object.values(KNOBS).map((k) => k.env).filter((e) =>
    ![
      "OPENVIKING_CAPTURE_WAIT_MS",
      "OPENVIKING_BYPASS_SESSION_PATTERNS",
      "OPENVIKING_DEBUG_LOG",
    ].includes(e)
  );
  assertEquals(named, expected);
  assertEquals(warnings.at(-1), 'debug log path "bogus" is not an absolute path; using the default');
});

/** A user's value (ovcli.conf), a workspace file's, and whether the workspace's is taken. */
type Case = [user: unknown, asked: unknown, taken: boolean];
/** What a workspace file may do with a knob (README's table says the same words), and cases that show it. */
type Allowed = { may: string; cases: Case[] };

// deno-fmt-ignore: the rules' cases, one a line
const [off, on, lower] = [
  { may: "turn it off", cases: [[true, false, true], [false, true, false], [true, true, true]] } as Allowed,
  { may: "turn it on", cases: [[false, true, true], [true, false, false], [false, false, true]] } as Allowed,
  (lo: number, hi: number): Allowed => ({ may: "lower it", cases: [[hi, lo, true], [lo, hi, false], [lo, lo, true]] }),
] as const;
const never = (a: unknown, b: unknown): Allowed => ({ may: "", cases: [[a, b, false], [b, a, false]] });

/** Every knob's rule for a workspace file: stricter, never weaker; never where data goes or who we are. */
const WORKSPACE: Record<Name, Allowed> = {
  enabled: off,
  autoRecall: off,
  autoCapture: off,
  workspacePeer: never(true, false),
  bypassSession: on,
  bypassSessionPatterns: {
    may: "add to it",
    cases: [[["/a/**"], ["/a/**", "/b/**"], true], [["/a/**"], ["/b/**"], false], [[], ["x*"], true]],
  },
  recallPeerScope: {
    may: 'set it to "actor" or "strict"',
    // deno-fmt-ignore
    cases: [["all", "actor", true], ["actor", "strict", true], ["strict", "actor", false], ["actor", "all", false]],
  },
  timeoutMs: never(15_000, 1000),
  promptBudgetMs: never(8000, 500),
  captureWaitMs: lower(0, 10_000),
  commitPolicy: never("balanced", "every-turn"),
  idleCommitSeconds: never(300, 1),
  redact: on,
  writePathAsync: never(true, false),
  debug: off,
  debugLogPath: never("/var/log/a.log", "/tmp/leak.log"),
};

const WS = "/repo/.openviking/config.json";

/** Resolves one knob with the user's value in ovcli.conf and a workspace file's. */
function withWorkspace(name: Name, user: unknown, asked: unknown) {
  const warnings: string[] = [];
  const sources = { env: { HOME: "/h" }, ovcli: { plugin: { kimicode: { [name]: user } } } };
  const s = resolveSettings({ ...sources, workspace: [{ path: WS, value: { [name]: asked } }] }, warnings);
  return { value: (s as Record<string, unknown>)[name], warnings };
}

Deno.test("knobs: a workspace file makes every knob stricter, never weaker, in the direction its rule says", () => {
  assertEquals(Object.keys(WORKSPACE).sort(), Object.keys(KNOBS).sort(), "every knob has its rule here");
  for (const [name, { may, cases }] of Object.entries(WORKSPACE) as [Name, Allowed][]) {
    assertEquals(KNOBS[name].workspace.may, may, name);
    for (const [user, asked, taken] of cases) {
      const why = `${name}: ${JSON.stringify(user)} → ${JSON.stringify(asked)}`;
      const ignored = `${WS} "${name}": ${JSON.stringify(asked)} is ignored: a workspace file ${
        may ? `may only ${may}` : "may not set it"
      }`;
      assertEquals(withWorkspace(name, user, asked), {
        value: taken ? asked : user,
        warnings: taken ? [] : [ignored],
      }, why);
    }
  }
});

Deno.test("loadConfig: a directory, a device or a huge file as a config is never read: a warning names it, defaults apply", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const home = `${dir.path}/.openviking`;
  const ws = `${dir.path}/repo/.openviking`;
  await Deno.mkdir(home, { recursive: true });
  await Deno.mkdir(ws, { recursive: true });
  // A FIFO blocks the open, /dev/zero never ends: stat refuses every file but a regular one, unopened.
  await Deno.mkdir(`${home}/ovcli.conf`);
  await Deno.symlink("/dev/null", `${home}/ov.conf`);
  await Deno.symlink("/dev/zero", `${ws}/config.json`);
  await Deno.writeTextFile(
    `${ws}/config.local.json`,
    `{"captureWaitMs": 3000, "pad": "${"x".repeat(1 << 20)}"}`,
  );
  const { config, warnings } = await loadConfig({ HOME: dir.path }, `${dir.path}/repo`);
  assertEquals([config.baseUrl, config.apiKey, config.captureWaitMs], ["http://127.0.0.1:1933", "", 10_000]);
  assertEquals(warnings.length, 4, warnings.join("\n"));
  for (const f of [`${home}/ovcli.conf`, `${home}/ov.conf`, `${ws}/config.json`]) {
    assertStringIncludes(warnings.join("\n"), `cannot read ${f}: not a regular file`);
  }
  assertStringIncludes(warnings.join("\n"), `cannot read ${ws}/config.local.json: larger than`);
});
