import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import {
  isValidPeerId,
  normalizeRemote,
  PEER_ID_PATTERN,
  remotePeerId,
  remoteUrlFromGitConfig,
  resolvePeer,
} from "./peer.ts";

const opts = { peerId: "", workspacePeer: true };

Deno.test("normalizeRemote: scp, https with user/port, ssh, .git, case", () => {
  const cases = [
    ["git@github.com:Volcengine/OpenViking.git", "github.com/volcengine/openviking"],
    ["https://user:pw@GitHub.com:443/a/b.git/", "github.com/a/b"],
    ["ssh://git@gitlab.example.com:2222/group/sub/repo", "gitlab.example.com/group/sub/repo"],
    ["/srv/git/repo.git", "/srv/git/repo"],
    ["  ", ""],
  ];
  assertEquals(cases.map(([url]) => [url, normalizeRemote(url)]), cases);
});

Deno.test("normalizeRemote: a broken userinfo (a raw @, / or : in the password) leaves no part of it", () => {
  const cases = [
    ["https://user:p@ss/word@github.com/a", "github.com/a"],
    ["https://p@ss/word@github.com/a.git", "github.com/a"],
    ["https://user:pass/word@github.com/a", "github.com/a"],
    ["ssh://git:s3cr@t@host.example/r", "host.example/r"],
    ["user:p@ss@github.com:a/b.git", "github.com/a/b"],
    ["user:pass/word@github.com:a/b", "github.com/a/b"],
    // Not userinfo: a port, a path's @, a scp path
    ["https://host.example:8443/a@b/c", "host.example/a@b/c"],
    ["github.com:me/x@y", "github.com/me/x@y"],
  ];
  assertEquals(cases.map(([url]) => [url, normalizeRemote(url)]), cases);
});

Deno.test("remotePeerId: safe, capped, ext- guarded", async () => {
  assertEquals(await remotePeerId("github.com/volcengine/openviking"), "github.com-volcengine-openviking");
  assertEquals(await remotePeerId("ext-host/x"), "x-ext-host-x");
  const long = await remotePeerId(`host/${"a".repeat(300)}`);
  assertEquals(long.length, 100);
  assertTrue(PEER_ID_PATTERN.test(long));
});

Deno.test("remoteUrlFromGitConfig prefers origin", () => {
  const origin =
    `[remote "origin"]\n\turl = git@github.com:me/fork.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`;
  const text = `[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://x/up.git\n${origin}`;
  assertEquals(remoteUrlFromGitConfig(text), "git@github.com:me/fork.git");
  assertEquals(remoteUrlFromGitConfig(`[remote "up"]\nurl = https://x/up.git`), "https://x/up.git");
  assertEquals(remoteUrlFromGitConfig("[core]\n"), "");
  // As git reads a value: a comment after it, quotes and escapes inside it.
  const read = (value: string) => remoteUrlFromGitConfig(`[remote "origin"]\n\turl = ${value}\n`);
  assertEquals(
    [
      "git@github.com:me/app.git ; mirror",
      "git@github.com:me/app.git# old",
      '"git@github.com:me/a;p\\"p.git"',
    ].map(read),
    ["git@github.com:me/app.git", "git@github.com:me/app.git", 'git@github.com:me/a;p"p.git'],
  );
});

Deno.test("resolvePeer: git remote from a subdirectory, worktree .git file, git root, cwd fallback, explicit, off", async () => {
  await using dir = await tempDir();
  const repo = `${dir.path}/proj`;
  await Deno.mkdir(`${repo}/.git`, { recursive: true });
  await Deno.mkdir(`${repo}/src/deep`, { recursive: true });
  await Deno.writeTextFile(
    `${repo}/.git/config`,
    `[remote "origin"]\n\turl = git@github.com:Acme/Widget.git\n`,
  );
  const fromRemote = { peerId: "github.com-acme-widget", source: "git-remote" };
  assertEquals(await resolvePeer(`${repo}/src/deep`, opts), fromRemote);

  // A worktree: .git is a file pointing at <main>/.git/worktrees/wt, whose commondir leads back.
  await Deno.mkdir(`${repo}/.git/worktrees/wt`, { recursive: true });
  await Deno.writeTextFile(`${repo}/.git/worktrees/wt/commondir`, "../..\n");
  await Deno.mkdir(`${dir.path}/wt`);
  await Deno.writeTextFile(`${dir.path}/wt/.git`, `gitdir: ${repo}/.git/worktrees/wt\n`);
  assertEquals((await resolvePeer(`${dir.path}/wt`, opts)).peerId, "github.com-acme-widget");

  const bare = `${dir.path}/norepo-remote`;
  await Deno.mkdir(`${bare}/.git`, { recursive: true });
  await Deno.writeTextFile(`${bare}/.git/config`, `[core]\n`);
  const root = { peerId: bare.replace(/[^A-Za-z0-9]/g, "-"), source: "git-root" };
  assertEquals(await resolvePeer(bare, opts), root);

  const plain = await resolvePeer("/tmp/some where/ünïcode", opts);
  assertTrue(plain.source === "cwd" && isValidPeerId(plain.peerId), plain.peerId);

  const explicit = { peerId: "me@laptop", source: "explicit" };
  assertEquals(await resolvePeer(repo, { ...opts, peerId: "me@laptop" }), explicit);
  assertEquals(await resolvePeer(repo, { ...opts, workspacePeer: false }), { peerId: "", source: "none" });
  assertEquals((await resolvePeer(repo, { ...opts, peerId: "bad/peer" })).source, "git-remote");
});

Deno.test("peer ids always match the server's pattern", async () => {
  for (const cwd of ["/", "C:\\Users\\me\\proj", "/a/" + "é".repeat(200), "/x/@@/y"]) {
    const p = await resolvePeer(cwd, opts);
    assertTrue(isValidPeerId(p.peerId), `${cwd} → ${p.peerId}`);
    assertTrue(p.peerId.length <= 100);
  }
  assertEquals(isValidPeerId("a@b@c"), false);
  assertEquals(isValidPeerId(".."), false);
});

Deno.test("resolvePeer: a device (or FIFO: the same rule, no process here to make one) at .git/config or .git is never read", async () => {
  await using dir = await tempDir();
  const cases: [string, (repo: string) => Promise<void>][] = [
    ["/dev/zero at .git/config", async (repo) => {
      await Deno.mkdir(`${repo}/.git`);
      await Deno.symlink("/dev/zero", `${repo}/.git/config`);
    }],
    ["/dev/zero at .git", (repo) => Deno.symlink("/dev/zero", `${repo}/.git`)],
  ];
  for (const [name, make] of cases) {
    const repo = `${dir.path}/${name.replace(/\W/g, "_")}`;
    await Deno.mkdir(repo);
    await make(repo);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const peer = await Promise.race([
      resolvePeer(repo, opts),
      new Promise<undefined>((resolve) => timer = setTimeout(() => resolve(undefined), 3000)),
    ]).finally(() => clearTimeout(timer));
    assertTrue(peer !== undefined, `${name}: resolvePeer returned`);
    assertEquals(peer.source === "git-root" || peer.source === "cwd", true, `${name}: ${peer.source}`);
  }
});

/** Whether this process runs as root: only root can give a file to another user. */
const ROOT = await Deno.makeTempFile().then(async (f) => {
  const root = (await Deno.stat(f)).uid === 0;
  await Deno.remove(f);
  return root;
});

Deno.test({
  name:
    "resolvePeer: a .git another user than the cwd's owns (a shared /tmp's) is no repository; a drive's is one",
  ignore: !ROOT,
  async fn() {
    await using dir = await tempDir();
    await Deno.mkdir(`${dir.path}/.git`);
    await Deno.writeTextFile(
      `${dir.path}/.git/config`,
      `[remote "origin"]\n\turl = git@github.com:me/private.git\n`,
    );
    await Deno.mkdir(`${dir.path}/work`);
    assertEquals((await resolvePeer(`${dir.path}/work`, opts)).source, "git-remote", "ours: followed");
    await Deno.chown(`${dir.path}/.git`, 65534, 65534);
    const peer = await resolvePeer(`${dir.path}/work`, opts);
    assertEquals([peer.source, peer.peerId], ["cwd", `${dir.path}/work`.replace(/[^A-Za-z0-9]/g, "-")]);
    await Deno.chown(`${dir.path}/work`, 65534, 65534); // a drive another user owns, the cwd's too
    assertEquals((await resolvePeer(`${dir.path}/work`, opts)).source, "git-remote", "a drive: followed");
  },
});
