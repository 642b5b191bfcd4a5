import { assertEquals } from "../support/assert.ts";
import { assertLinear, mb } from "../support/linear.ts";
import { redact, REDACTED } from "../../runtime/redact.ts";

Deno.test("redact: <private> spans go, even unclosed", () => {
  assertEquals(redact("keep <private>my ssn 123</private> this"), "keep  this");
  assertEquals(redact("a <PRIVATE note=1>x\ny</Private> b"), "a  b");
  assertEquals(redact("start <private>never closed"), "start ");
});

Deno.test("redact: obvious credentials", () => {
  const cases: [string, string][] = [
    ["key sk-abcdefghijklmnopqrstuv12 end", `key ${REDACTED} end`],
    ["sk-ant-api03-abcdefghijklmnopqrstuvwx", REDACTED],
    ["aws AKIAIOSFODNN7EXAMPLE here", `aws ${REDACTED} here`],
    ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", REDACTED],
    ["github_pat_11ABCDEFG0123456789_abcdefghijklmnop", REDACTED],
    ["xoxb-1234567890-abcdefghij", REDACTED],
    ["Authorization: Bearer eyJhbGciOi.abc.def", `Authorization: Bearer ${REDACTED}`],
    ["password=hunter2 and more", `password=${REDACTED} and more`],
    ['{"token": "abc123xyz"}', `{"token": ${REDACTED}}`],
    ["secret='s3cr3t'", `secret=${REDACTED}`],
    ["DB_PASSWORD=p@ss word", `DB_PASSWORD=${REDACTED}`],
    ["export GITHUB_TOKEN=abc", `export GITHUB_TOKEN=${REDACTED}`],
    ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", REDACTED],
    ["-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb", REDACTED],
  ];
  for (const [input, expected] of cases) assertEquals(redact(input), expected, input);
});

Deno.test("redact: ordinary prose and code are untouched", () => {
  const texts = [
    "Use tabs, not spaces. The token budget is 2000.",
    "const tokens = tokenize(input); // split into tokens",
    "PATH=/usr/bin:/bin\nHOME=/home/user",
    "ask-for-help and task-12345 are fine",
    "I prefer the password manager 1Password.",
  ];
  for (const t of texts) assertEquals(redact(t), t);
  // Together, with LF and CRLF line ends: no rule reaches from one line into the next.
  for (const eol of ["\n", "\r\n", "\n\n", "\r\n\r\n"]) {
    assertEquals(redact(texts.join(eol)), texts.join(eol));
  }
});

Deno.test("redact: .env lines, also CRLF and after blank lines; a value on the next line is not the key's", () => {
  assertEquals(
    redact("A=1\r\n\r\n  API_KEY = abc def\r\nexport DB_TOKEN=x\r\nTOKEN_COUNT\r\n=5\r\n"),
    `A=1\r\n\r\n  API_KEY = ${REDACTED}\r\nexport DB_TOKEN=${REDACTED}\r\nTOKEN_COUNT\r\n=5\r\n`,
  );
  assertEquals(redact("MY_SECRET_VALUE_2=s3\nPATH=/bin"), `MY_SECRET_VALUE_2=${REDACTED}\nPATH=/bin`);
});

Deno.test("redact: an unclosed private key block is redacted to the end; an unended <private> hides the rest", () => {
  assertEquals(
    redact("a\n-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END RSA PRIVATE KEY-----\nz"),
    `a\n${REDACTED}`,
  );
  assertEquals(
    redact("k -----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY----- and -----BEGIN PRIVATE KEY-----\ny"),
    `k ${REDACTED} and ${REDACTED}`,
  );
  assertEquals(redact("x <private>a</private> y <private>b"), "x  y ");
  assertEquals(redact("x <private <b>hidden</b> and all after"), "x ");
  assertEquals(redact("a mention of <private with no end"), "a mention of <private with no end");
});

Deno.test("redact: every rule is linear — 1 MB of its worst case in well under a second each", () => {
  const cases: Record<string, string> = {
    // the finding: `\s*` of the .env rule ran across CRLF lines from every line start
    "CRLF blank lines": mb("\r\n"),
    "CRLF lines of a blank": mb(" \r\n"),
    "LF blank lines": mb("\n"),
    "env key without =": mb("A_TOKEN\r\n"),
    "one long key full of secret words": mb("SECRET") + "\n",
    "export lines": mb("export \n"),
    "keys then blanks": mb("TOKEN \t \n"),
    // <private>
    "private opens without >": mb("<private "),
    "private opens never closed": mb("<private>"),
    "private closes without >": "<private>" + mb("</private "),
    // private key blocks
    "key block begins never ended": mb("-----BEGIN RSA PRIVATE KEY-----\n"),
    "key block names never ending": mb("-----BEGIN " + "A ".repeat(30)),
    // provider keys and tokens
    "sk- chains": mb("sk-"),
    "sk- too short": mb("sk-abcdefghijklmno "),
    "gh token then _": mb("ghp_" + "a".repeat(40) + "_"),
    "gh token one run": "ghp_" + mb("a") + "_",
    "AKIA runs": mb("AKIA"),
    "xox chains": mb("xoxb-"),
    "github_pat chains": mb("github_pat_"),
    "Bearer then blanks": "Bearer" + mb(" ") + "x",
    "Bearer chains": mb("Bearer "),
    // inline assignments
    "token then newlines": mb("token\n"),
    "token then blanks, no =": "token" + mb(" "),
    "token= with an open quote": mb('token="'),
    "token: mixed quotes": mb('token=\'a"token="'),
    "password: blanks": mb("password:  \n"),
  };
  assertLinear("redact", redact, cases);
});
