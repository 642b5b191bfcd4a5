/**
 * Issue #19 point 5: from a checkout, `deno task -q cli <command>` runs in deno.json's folder and says where
 * the user ran it in `INIT_CWD`; `status`, `recall` and install's relative `--kimi-home` answer for that
 * directory, not the checkout's. Run through the real `deno task` (so `INIT_CWD` is set as deno task sets it) and through the entry point.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { denoEnv, ROOT, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { closedAddress, isolatedEnv } from "../install/helpers.ts";
import { StatusSchema } from "../../cli/status.ts";

/** A project whose git `origin` names the peer `github.com-acme-shop`. */
async function project(root: string, name: string): Promise<string> {
  const dir = `${root}/${name}`;
  await Deno.mkdir(`${dir}/.git`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/.git/config`,
    `[remote "origin"]\n\turl = git@github.com:acme/${name}.git\n`,
  );
  await Deno.writeTextFile(`${dir}/.git/HEAD`, "ref: refs/heads/main\n");
  return dir;
}

/** `deno task -q --config <checkout>/deno.json cli <args>` run in `cwd`, as a user runs it from a checkout. */
async function task(env: Record<string, string>, cwd: string, args: string[], code = 0) {
  const task = ["task", "-q", "--config", `${ROOT}/deno.json`, "cli", ...args];
  const options = { env: { ...env, ...denoEnv() }, clearEnv: true, cwd, timeoutMs: 60_000 };
  const r = await runProcess(Deno.execPath(), task, options);
  assertEquals(r.code, code, `${args.join(" ")}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

Deno.test("status and install answer for the directory the user ran them in", async () => {
  await using dir = await tempDir();
  const [shop, cart] = [await project(dir.path, "shop"), await project(dir.path, "cart")];
  const env = isolatedEnv(`${dir.path}/home`, {
    OPENVIKING_URL: closedAddress(),
    OPENVIKING_TIMEOUT_MS: "300",
  });
  const status = StatusSchema.parse(JSON.parse(await task(env, shop, ["status", "--json"])));
  assertEquals(status.connection.peer, { id: "github.com-acme-shop", source: "git-remote" });
  // A relative --cwd is the user's too (recall's workspace: lib/self.ts workspaceDir; memories shares it);
  // nothing answers at the closed address, so recall exits 1 with its JSON.
  const recall = await task(env, shop, [
    "recall",
    "how should I indent this file?",
    "--cwd",
    "../cart",
    "--json",
  ], 1);
  assertEquals(JSON.parse(recall).peer, { id: "github.com-acme-cart", source: "git-remote" });
  const install = await task(env, shop, ["install", "--dry-run", "--kimi-home", "kimi"]);
  assertMatch(install, new RegExp(`Kimi Code home ${shop}/kimi does not exist yet`));
  const peer = async (args: string[], cwd: string, extra: Record<string, string> = {}) => {
    const r = await runCli(["status", "--json", ...args], { env: { ...env, ...extra }, clearEnv: true, cwd });
    assertEquals(r.code, 0, r.stderr);
    return StatusSchema.parse(JSON.parse(r.stdout)).connection.peer.id;
  };
  // Not run by deno task in the checkout (an INIT_CWD an outer `npm run` left): the cwd is the user's.
  assertEquals(await peer([], shop, { INIT_CWD: cart }), "github.com-acme-shop");
});
