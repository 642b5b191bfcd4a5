import { writeConfigModeHome } from "./config_mode_home.ts";
import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { FakeOpenViking, MODEL_DOWN } from "../support/fake-openviking.ts";
import { renderChecks, runDoctor } from "../../cli/doctor.ts";
import type { Check } from "../../install/check.ts";
import { runInstall } from "../../install/install.ts";
import { enqueueCommit } from "../support/queue.ts";
import { emptyState, writeState } from "../../memory/state.ts";
import { hookStateDir, pendingDir } from "../../lib/paths.ts";
import { closedAddress, installSandbox, noServerFix } from "./helpers.ts";
import { commandName } from "../../lib/self.ts";

const NOW = Date.parse("2026-11-30T12:00:00.000Z");

/** A sandbox (tests/install/helpers.ts) with an in-process install and doctor of its Kimi home. */
async function setup(root: string, extra: Record<string, string>) {
  const t = await installSandbox(root, extra);
  const env = t.ctx().env;
  const install = () => t.run(runInstall);
  const doctor = () => runDoctor({ env, home: t.kimi, os: "posix", now: NOW });
  return { ...t, env, install, doctor };
}

function byId(checks: Check[]): Record<string, Check> {
  return Object.fromEntries(checks.map((c) => [c.id, c]));
}

Deno.test("doctor: everything in place → no failure; queue and captures reported, a known protocol not", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-doctor" });
  const t = await setup(dir.path, { OPENVIKING_URL: fake.url, OPENVIKING_API_KEY: "sk-doctor" });
  await t.install();
  await enqueueCommit(pendingDir(t.env), "kc-1", "kc-1:0:assistant", NOW - 2 * 3_600_000);
  const state = {
    ...emptyState(),
    lastCaptureAt: NOW - 60_000,
    lastCaptureEvent: "Stop",
    protocolVersion: "1.5",
  };
  await writeState(`${hookStateDir(t.env)}/session_a.json`, state);
  const checks = await t.doctor();
  const c = byId(checks);
  assertEquals(checks.filter((x) => x.status === "fail"), [], renderChecks(checks));
  const statuses = [c.hooks.status, c.mcp.status, c.command.status, c.server.status, c.auth.status];
  assertEquals(statuses.join(), "ok,ok,ok,ok,ok");
  assertEquals(c.queue.status, "warn");
  assertStringIncludes(c.queue.fix!, `\`${commandName(t.env)} replay\``); // the command doctor runs as
  assertMatch(c.captures.summary, /^last capture .* \(1 session\(s\)\)$/); // each session's: `status`
  assertEquals(c.protocol, undefined, "a known journal protocol: nothing to say");
  assertTrue(fake.requestsTo("POST /api/v1/search/find").length === 1, "auth is proven with a real search");
  assertNotMatch(renderChecks(checks), /sk-doctor/);
});

Deno.test("doctor: wrong key, unknown protocol, nothing installed → failures with fixes, never the key", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "right" });
  const t = await setup(dir.path, { OPENVIKING_URL: fake.url, OPENVIKING_API_KEY: "wrong-key-123" });
  await writeState(`${hookStateDir(t.env)}/s.json`, {
    ...emptyState(),
    lastCaptureAt: NOW,
    protocolVersion: "9.0",
  });
  const checks = await t.doctor();
  const c = byId(checks);
  assertEquals(
    [c.hooks.status, c.mcp.status, c.auth.status, c.protocol.status].join(),
    "fail,fail,fail,warn",
  );
  assertStringIncludes(c.hooks.fix!, `\`${commandName(t.env)} install\``);
  assertMatch(c.auth.fix!, /--api-key/);
  assertNotMatch(JSON.stringify(checks), /wrong-key-123/);
});

Deno.test("doctor: registered twice (config + plugin by hand) is a failure; only the plugin's program is run", async () => {
  await using dir = await tempDir();
  const t = await setup(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  await t.install();
  // A second registration written by hand, as a user copying the snippet would.
  await Deno.writeTextFile(
    `${t.kimi}/config.toml`,
    '[[hooks]]\nevent = "Stop"\ncommand = "/gone/openviking-kimi hook stop"\n',
  );
  const checks = await t.doctor();
  const c = byId(checks);
  assertEquals(c.hooks.status, "fail");
  assertMatch(c.hooks.summary, /Stop ×2/);
  assertEquals(c["hooks-outside-block"].status, "warn");
  const commands = checks.filter((x) => x.id === "command");
  assertEquals(commands.map((x) => x.status), ["ok"]);
  assertEquals(c.server.status, "fail");
});

Deno.test("doctor: a disabled plugin, a config Kimi rejects, a missing Kimi home", async () => {
  await using dir = await tempDir();
  const t = await setup(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  await t.install();
  const reg = JSON.parse(await Deno.readTextFile(`${t.kimi}/plugins/installed.json`));
  reg.plugins[0].enabled = false;
  await Deno.writeTextFile(`${t.kimi}/plugins/installed.json`, JSON.stringify(reg));
  await Deno.writeTextFile(`${t.kimi}/config.toml`, '[[hooks]]\nevent = "Stop"\ncommand = "x"\ncwd = "/"\n');
  const c = byId(await t.doctor());
  assertMatch(c.hooks.fix!, /\/plugins enable openviking-memory/);
  assertEquals(c.config.status, "fail");
  assertMatch(c.config.detail!.join(), /"cwd"/);
  const missing = await runDoctor({ env: t.env, home: `${dir.path}/nope`, os: "posix", now: NOW });
  assertEquals(byId(missing)["kimi-home"].status, "fail");
});

Deno.test('doctor with nothing answering at the address gives the fix that points to README\'s "No server yet?"', async () => {
  await using dir = await tempDir();
  const url = closedAddress();
  const t = await setup(dir.path, { OPENVIKING_URL: url });
  const { server } = byId(await t.doctor());
  assertMatch(server.summary, new RegExp(`OpenViking at ${url} is not reachable: `));
  assertEquals([server.status, server.fix], ["fail", noServerFix(commandName(t.env), true)]);
});

Deno.test("doctor quotes a proxy's error page: its status and <title>, and the fix", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const t = await setup(dir.path, { OPENVIKING_URL: fake.url });
  const page = (title: string) => ({
    status: 502,
    headers: { "content-type": "text/html; charset=utf-8" },
    body: `<html><head><title>${title}</title></head><body><center>nginx</center></body></html>`,
  });
  fake.fault({ route: "GET /health", raw: page("502 Bad Gateway") });
  const { server } = byId(await t.doctor());
  assertEquals(server.status, "fail");
  assertStringIncludes(server.summary, `HTTP 502 with text/html "502 Bad Gateway"`);
  assertMatch(
    server.fix!,
    /^the answer is not OpenViking's own \(a proxy's or gateway's page\?\): check that OpenViking runs/,
  );
});

Deno.test("doctor, run in a repository whose .openviking/config.json turns redaction off, names what was ignored", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/repo/.openviking`, { recursive: true });
  const file = `${dir.path}/repo/.openviking/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({ redact: false }));
  const t = await setup(dir.path, { OPENVIKING_URL: closedAddress() });
  const { settings } = byId(
    await runDoctor({ env: t.env, home: t.kimi, os: "posix", now: NOW, cwd: `${dir.path}/repo` }),
  );
  assertEquals(settings?.status, "warn");
  assertEquals(settings?.detail, [
    `${file} "redact": false is ignored: a workspace file may only turn it on`,
  ]);
  assertMatch(settings?.fix ?? "", /workspace file may only make memory stricter/);
});

Deno.test("doctor: the server's embedding model unreachable → the model check fails with the server's words, not auth", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-doctor" });
  const t = await setup(dir.path, { OPENVIKING_URL: fake.url, OPENVIKING_API_KEY: "sk-doctor" });
  fake.fault(MODEL_DOWN); // a provider's 401 is the model's too: openviking/client_test.ts, advice_test.ts
  const c = byId(await t.doctor());
  assertEquals([c.server.status, c.auth.status, c.model?.status], ["ok", "ok", "fail"]);
  assertStringIncludes(c.model.summary, "model is unreachable");
  assertStringIncludes(c.model.summary, MODEL_DOWN.error.message);
  assertMatch(c.model.fix!, /ov\.conf's embedding section/);
});

Deno.test("doctor: a Kimi home the record of homes no longer lists is a failure: its hooks do nothing", async () => {
  await using dir = await tempDir();
  const t = await setup(dir.path, { OPENVIKING_URL: closedAddress() });
  const record = `${t.ov}/agent-integrations/kimicode/kimi-homes`;
  await t.install();
  assertEquals(byId(await t.doctor()).homes, undefined, "listed: nothing to say");
  await Deno.remove(record);
  const checks = await t.doctor();
  const c = byId(checks).homes;
  assertEquals(c?.status, "fail", renderChecks(checks));
  assertStringIncludes(c.summary, `${record} does not list ${t.kimi}`);
  assertStringIncludes(c.summary, "do nothing: no recall, no capture");
  assertStringIncludes(c.fix!, "install`");
  await t.install();
  assertEquals(byId(await t.doctor()).homes, undefined, "install lists the home again");
});

Deno.test("doctor: a config-mode home an older version left is named, with install as the fix", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ apiKey: "sk-doctor" });
  const t = await setup(dir.path, { OPENVIKING_URL: fake.url, OPENVIKING_API_KEY: "sk-doctor" });
  await writeConfigModeHome(t.kimi);
  const hooks = byId(await t.doctor()).hooks;
  assertEquals(hooks.status, "warn", renderChecks([hooks]));
  assertMatch(hooks.summary, /registered in config mode \(config\.toml\), which is gone/);
  assertStringIncludes(hooks.fix!, `\`${commandName(t.env)} install\`: it moves this home to the plugin`);
  await t.install();
  assertEquals(byId(await t.doctor()).hooks.status, "ok", "after install: the plugin's hooks, once");
});
