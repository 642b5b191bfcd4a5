import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { CREDENTIALS, NOT_SECRETS } from "../tests/support/credentials.ts";
import { assertLinear, LINEAR_BOUND_MS, mb as repeated, NearPrint } from "../tests/support/linear.ts";
import { CREDENTIAL_RULES, MAX_PRINTS, redact, REDACTED, redactWith, secretPrint } from "./redact.ts";

/**
 * The linear-time cases: 128 KB of each worst case (not 1 MB), each within 375 ms (a quarter of the 1 MB bound,
 * some ten times what a linear rule takes): an eighth of the work, and a super-linear rule still fails (the
 * quadratic .env rule this file once caught takes 71 s on 128 KB).
 */
const SIZE = 1 << 17;
const BOUND_MS = LINEAR_BOUND_MS / 4;
const mb = (unit: string, size = SIZE) => repeated(unit, size);

/** A case: its text with each secret marked `«…»`, then the text and what redaction must make of it. */
const marked = (c: string | [string, string]): [string, string] =>
  typeof c === "string" ? [c.replace(/[«»]/g, ""), c.replace(/«[^»]*»/g, REDACTED)] : c;

Deno.test("redact: exactly the «marked» secrets go, the words around them stay; prose and code naming secrets stay", () => {
  const putty = (version: number, lines: string[]) =>
    [
      `PuTTY-User-Key-File-${version}: ssh-ed25519`,
      "Encryption: none",
      "Comment: eddsa-key-20240101",
      "Public-Lines: 2",
      "AAAAC3NzaC1lZDI1NTE5AAAAIKq5mS0v6eN8m3xWcY1Qp0nB4rT7uVzJ2dLhF9aK",
      "XoE=",
      `Private-Lines: ${lines.length}`,
      ...lines,
      "Private-MAC: 7c3f0e9b2a1d4c5e6f708192a3b4c5d6e7f8091a",
    ].join("\n");
  const key = ["AAAAIFp3bQ9xKc2vT8mN1rY6sW4eL0uH7jG5dA3fB9zQyXoP", "Zq8Rt6Wv3Yx1Bc7Nd0Hj5Gq=="];
  const sha = "$6$rounds=5000$Zx9q8w7e$Zx9q8w7e6r5t4y3u2i1o0pAsDfGhJkLzXcVbNm.Q/1234567890abcdefghij";
  const cases: (string | [string, string])[] = [
    ["keep <private>my ssn 123</private> this", "keep  this"], // <private> spans go, even unclosed
    ["a <PRIVATE note=1>x\ny</Private> b", "a  b"],
    ["start <private>never closed", "start "],
    "key «sk-abcdefghijklmnopqrstuv12» end",
    "«sk-ant-api03-abcdefghijklmnopqrstuvwx»",
    "aws «AKIAIOSFODNN7EXAMPLE» here",
    "«ghp_abcdefghijklmnopqrstuvwxyz0123456789»",
    "«github_pat_11ABCDEFG0123456789_abcdefghijklmnop»",
    "«xoxb-1234567890-abcdefghij»",
    "Authorization: Bearer «eyJhbGciOi.abc.def»",
    "use password=«hunter2» and more",
    "password=«hunter2» and more", // a glued `=` is the shell's: a blank ends the value, on a line of its own too
    '{"token": «"abc123xyz"»}',
    "secret=«'s3cr3t'»",
    "DB_PASSWORD=«p@ss» word",
    "DB_PASSWORD = «p@ss word»",
    "export GITHUB_TOKEN=«abc»",
    "«-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----»",
    "«-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb»",
    "a\n«-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END RSA PRIVATE KEY-----\nz»",
    "k «-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----» and «-----BEGIN PRIVATE KEY-----\ny»",
    ["x <private>a</private> y <private>b", "x  y "],
    ["x <private <b>hidden</b> and all after", "x "],
    "A=1\r\n\r\n  API_KEY = «abc def»\r\nexport DB_TOKEN=«x»\r\nTOKEN_COUNT\r\n=5\r\n", // a value on the next line is not the key's
    "MY_SECRET_VALUE_2=«s3»\nPATH=/bin",
    "my password is «hunter2»",
    "the password is: «correcthorsebatterystaple»",
    "mysql -u root -p«MyS3cretPw» db",
    "mysqldump -h db -u app -p«'Tr0ub4dor&3'» shop > shop.sql",
    "unlock it with passphrase «Tr0ub4dor&3» please",
    "my api key is «7f3a9b2c4d5e6f708192a3b4c5d6e7f8».",
    "Passwort: «Sommer2024!Blau»",
    "мой пароль от сервера «Qwerty2024!Zima», почему?",
    "'Authorization: Token «token=\"Rails7TokenAbc123\"»'",
    'Authorization: Digest «username="me", response="6629fae4"»',
    "db:\n  password: |\n    «YamlBlock9SecretQ»\n  user: app",
    "<Password>«IisPass7Word9x»</Password>",
    "redis-cli -a «R3disPassw0rdXq» ping",
    "my password is «пароль123», mi contraseña es «Mañana99»",
    "Пароль от личного кабинета: «Hunter2x»",
    "Passwort für die DB: «Hunter2x»",
    "The password for staging: «Hunter2x»",
    "the password for `admin` is «Hunter2x»",
    'das Passwort für "root" ist «Hunter2x»',
    "Пароль — «Hunter2x»; password - «Hunter2x»",
    "password: |2 # db\n\n  «Hunter2xSecret»",
    "<key>Password</key>\n\t<string>«Hunter2xSecret»</string>",
    "<password><![CDATA[«Hunter2x&<»]]></password>",
    '<add key="Password" value="«Hunter2x»"/>',
    '<property name="password" value="«Hunter2x»"/>',
    "smbclient //srv/share -U 'DOM\\alice%«S3cret!»'",
    "smbclient -L srv -Ualice%«S3cretPw»",
    "Cookie: session_id=«9f8e7d6c5b4a39281706»; theme=«dark»",
    "Set-Cookie: sid=«Q2xvdWRGbGFyZQ9f8e»; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly",
    "curl -H 'cookie: sessionid=«abc123def456»' https://x.test",
    '{"Cookie": "session_id=«9f8e7d6c5b4a»"}',
    '"GET / HTTP/1.1\\nCookie: sid=«9f8e7d6c5b4a»\\n"',
    "bot token «123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0» here",
    "curl https://api.telegram.org/bot«1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDs-_0»/getMe",
    "password：«Hunter2Rover»",
    "密码：«Hunter2Rover»，谢谢",
    "我的密码: «Hunter2Rover».",
    "新しいパスワード：«Tr0ub4dor&3»",
    "비밀번호: «Hunter2Rover»",
    "Пароль: «Hunter2Rover»",
    [putty(3, key.slice(0, 1)), putty(3, [REDACTED])],
    [putty(2, key), putty(2, key).replace(key.join("\n"), REDACTED)],
    [JSON.stringify(putty(2, key)), JSON.stringify(putty(2, key).replace(key.join("\n"), REDACTED))],
    "db_password=«x» and then more words", // an assignment's value goes, not the words after it
    "DB_PASSWORD=«Tr0ub4dor» then run make",
    "export API_TOKEN=«Zq8Rt6Wv» ./deploy.sh --prod",
    '{"cmd": "x\\nDB_PASSWORD=«hunter2» make test"}',
    `usermod -p '«${sha}»' alice`, // a crypt(3) hash, quoted, in a shadow line, in JSON
    `root:«${sha}»:19000:0:99999:7:::`,
    JSON.stringify({ shadow: `root:«${sha}»:19000` }),
    "«$2b$12$KIXQJ7h1zL2rVbXoV1Yt5uC3m8F9aG0eH4iJ5kL6mN7oP8qR9sT0u» ok",
    "«$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7»",
    "«$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG»",
    "key «AKIA\u200bIOSFODNN7\u200dEXAMPLE» ok", // an invisible character inside a word is dropped first
    ["soft\u00adhyphen and \u200b alone", "softhyphen and \u200b alone"],
    JSON.stringify({ cmd: "curl https://api.example.com \\\n-u admin:«Hunter2xQ9» -X POST" }), // at a JSON line's start
    // disguised (fullwidth, look-alike, marked, escaped): hidden as written, what was dropped after it with it
    "set ｐａｓｓｗｏｒｄ=«Tr0ub4dorXq» ok",
    "ｐａｓｓｗｏｒｄ：　«Ｔｒ０ｕｂ４ｄｏｒＸｑ» ok",
    "push «ghp_ZX7DfL3Fuo\u0301XmsC4vynNdwifV0xbWhEpIjsXU\u0301» please",
    "see \x1b[1m«ghp_ZX7DfL3Fuo\x1b[0mXmsC4vynNdwifV0xbWhEpIjsXU\x1b[0m»",
    "p\u0430ssword=«Tr0ub4dorXq9» ok", // a Cyrillic а
    '{"t": "p\\u0430ssword\\u003d«Tr0ub4dorXq9»", "\\u0074oken": «"Zq8Rt6Wv3Yx1"»}',
    ...["\ufe00", "\ufe0f", "\u{e0100}", "\u3164", "\u{e0041}"] // a variation selector or Hangul filler inside
      .map((c) => `push with «ghp_ZX7DfL3Fuo${c}XmsC4vynNdwifV0xbWhEpIjsXU» please`),
  ];
  for (const [input, expected] of cases.map(marked)) assertEquals(redact(input), expected, input);
  const prose = [
    "the password is wrong",
    "my password is too short",
    "the secret to this is patience, and the password was rejected",
    "the token limit is 4096; each token is about four characters",
    "mysql -u root -p db",
    "mysql -p$MYSQL_PWD db",
    "docker run -p 8080:80 nginx",
    "docker login -u me -p $REGISTRY_PASSWORD",
    "pg_dump -p 5432 db and grep -pattern",
    "the password for prod is wrong, the password for user42 was reset",
    "Das Passwort ist falsch. Das Passwort für die Datenbank ist geändert. La contraseña es mañana.",
    "пароль от сервера неверный; mi contraseña es incorrecta; le mot de passe est erroné",
    "パスワードが違います。비밀번호는 틀렸어요. 密码是什么？",
    "redis-cli -a $REDIS_PASS ping; ssh-keygen -N '' -f k; zip -P \"$ZIP_PASS\" a.zip; smbclient -U admin",
    "description: |\n  Some text\npassword: |\n  $DB_PASSWORD",
    "<Password>******</Password> and <Name>Tr0ub4dor3x</Name>",
    "Authorization: Token $API_TOKEN",
    "<passwordEncoder>bcrypt</passwordEncoder> <auth>required</auth> <password-policy>strict</password-policy>",
    "la clave de caché es sha256; La clave es HTTP2; palabra clave: async2",
    "ショートカットキー: Ctrl+S; 키: Enter",
    "the cookie: chocolate chip, and a Cookie: header names them",
    "Set-Cookie: is sent by the server",
    "call 12345678:90 at noon",
    "密码：不对",
    "密码: 忘了",
    "пароль: забыл",
    "password：wrong",
    "Private-Lines: is a PuTTY field",
    "a mention of <private with no end",
    "vault kv get -field=password secret/app", // a secret's name as an option's value is none
    'expect "password:" ; send "$pw\\r"', // the quote after a key in a string closes it, opens no value
    "say 'token=' then 'x y'",
    "keycap 1\ufe0f\u20e3 and ❤\ufe0f stay",
    "re\u0301sume\u0301 and cafe\u0301, ﬁle ①②, Ｈｅｌｌｏ　ｗｏｒｌｄ！",
    "Пароль забыл, что делать? Токен в документации. Ключ: см. вики. Ελληνικά: το κείμενο.",
    "café, naïve, résumé, der Schlüssel; հայերեն տեքստ",
    '{"name": "caf\\u00e9", "smile": "\\ud83d\\ude00", "q": "\\u0022a\\u0022", "n": "\\u000a"}',
    "密码忘了，怎么办？令牌：见文档。パスワード（再設定）",
    "\x1b[32mok\x1b[0m 12 tests passed, token budget 4096",
    "नमस्ते दुनिया, ไทย ภาษา",
  ];
  for (const t of prose) assertEquals(redact(t), t);
});

/**
 * A sample's text where it may sit: alone, inside prose, with CRLF line ends, twice in a row, in a code
 * fence, and as a JSON string (a pasted log line: escaped newlines and quotes).
 */
function contexts(text: string): string[] {
  return [
    text,
    `Here is what I ran:\n${text}\nWhy does it fail?`,
    text.replaceAll("\n", "\r\n") + "\r\n",
    `${text}\n${text}`,
    "```\n" + text + "\n```",
    JSON.stringify({ level: "error", msg: `request failed:\n${text}` }),
  ];
}

Deno.test("redact: every real-format credential goes, wherever it sits", () => {
  const missed: string[] = [];
  for (const c of CREDENTIALS) {
    for (const text of contexts(c.text)) {
      const out = redact(text);
      const leaked = [c.secret, c.tail].some((s) =>
        out.includes(s) || out.includes(JSON.stringify(s).slice(1, -1))
      );
      if (leaked || !out.includes(REDACTED)) missed.push(`${c.rule}: ${JSON.stringify(out)}`);
    }
  }
  assertEquals(missed, []);
});

Deno.test("redact: every rule has a real-format sample, and that rule alone removes it", () => {
  for (const name of Object.keys(CREDENTIAL_RULES)) {
    assertTrue(CREDENTIALS.some((c) => c.rule === name), `no sample for the rule ${name}`);
  }
  for (const c of CREDENTIALS) {
    const rule = CREDENTIAL_RULES[c.rule];
    assertTrue(rule !== undefined, `${c.rule} is no rule`);
    assertTrue(
      !redactWith([rule], c.text).includes(c.secret),
      `${c.rule} alone leaves ${c.secret} in ${JSON.stringify(c.text)}`,
    );
  }
});

Deno.test("redact: ordinary code and prose hold no secret and are left as they are", () => {
  for (const t of NOT_SECRETS) assertEquals(redact(t), t);
  // Together, with LF and CRLF line ends: no rule reaches from one line into the next.
  for (const eol of ["\n", "\r\n", "\n\n", "\r\n\r\n"]) {
    assertEquals(redact(NOT_SECRETS.join(eol)), NOT_SECRETS.join(eol));
  }
  assertEquals(redact(JSON.stringify(NOT_SECRETS)), JSON.stringify(NOT_SECRETS));
});

Deno.test("redact: every rule is linear — 128 KB of its worst case in well under 400 ms each", () => {
  const cases: Record<string, string> = {
    // the finding: `\s*` of the .env rule ran across CRLF lines from every line start
    "CRLF blank lines": mb("\r\n"),
    "CRLF lines of a blank": mb(" \r\n"),
    "LF blank lines": mb("\n"),
    "env key without =": mb("A_TOKEN\r\n"),
    "one long key full of secret words": mb("SECRET") + "\n",
    "export lines": mb("export \n"),
    "crypt hash openings": mb("$6$rounds=5000$"), // the crypt-hash rule: a `$` run of segments, no hash
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
    "Basic and a run that never decodes": "Basic " + mb("a"),
    "Basic chains": mb("Basic dXNlcjpw "),
    // inline assignments
    "token then newlines": mb("token\n"),
    "token then blanks, no =": "token" + mb(" "),
    "token= with an open quote": mb('token="'),
    "token: mixed quotes": mb('token=\'a"token="'),
    "password: blanks": mb("password:  \n"),
    // the credential shapes and contexts
    "a secret key whose value is code, chained": mb("token:a("),
    "a spaced secret key whose value is code": mb("token = a("),
    "a secret key whose value is a placeholder": mb("token:<"),
    "keys that name no secret, chained": mb("a="),
    "secret keys, chained": mb("token="),
    ".env lines with a variable": mb("PASSWORD=$\n"),
    ".env lines with blanks": mb("PASSWORD=a b c\n"),
    "a quoted key never assigned": mb('"token'),
    "a JWT head that never gets its dot": mb("eyJ" + "a".repeat(20) + "-"),
    "JWT heads with dots": mb("eyJ" + "a".repeat(10) + "."),
    "SendGrid heads": mb("SG."),
    "a SendGrid head and one run": mb("SG." + "a".repeat(20)),
    "schemes with a user, never an @": mb("a://b:"),
    "a scheme and a password that never ends": "a://b:" + mb("c"),
    "Authorization headers without a value": mb("Authorization: "),
    "Bearer and a run without a digit": "Bearer " + mb("a"),
    "-u options": mb("-u a:"),
    "-u= options in one run": mb("-u=a:"),
    "Azure secret heads in one run": mb("abc8Q~"),
    "Square heads in one run": mb("EAAA"),
    "PGP key blocks begun never ended": mb("-----BEGIN PGP PRIVATE KEY BLOCK-----\n"),
    "key END lines, each after base64": mb("AAAA\n-----END PRIVATE KEY-----\n"),
    "base64 lines before one END line": mb("A".repeat(64) + "\n") + "-----END PRIVATE KEY-----",
    "escaped lines before one END line": mb("\\nAAAA") + "-----END PRIVATE KEY-----",
    "CR runs before END lines": mb("\r\r\n-----END PRIVATE KEY-----"),
    "curl cookie options without =": mb("-b a"),
    "Oracle logons never ending": mb("sqlplus a/"),
    "Go DSNs never reaching @tcp(": mb("a:b/"),
    "Go DSN users glued by colons": mb("a:"),
    "op commands on one line": mb("op read "),
    "PASS lines after USER lines": mb("USER a\nPASS \n"),
    "session keys, chained": mb("BW_SESSION="),
    "host:port runs, never a prompt": mb("a.b:1"),
    "SQL passwords never closed": mb("IDENTIFIED BY 'a"),
    "XML elements named by an attribute, never closed": mb('<a name="password">x'),
    "name/value pairs": mb("- name: DB_PASSWORD\n  value: "),
    "variable defaults never closed": mb("${DB_PASSWORD:a"),
    "sensitive outputs without a value": mb('"sensitive": true, '),
    "echo redirections": mb("echo a > "),
    "Slack webhook paths": mb("hooks.slack.com/services/"),
    // pasted JSON: escapes and escaped quotes
    "JSON escapes": mb("\\n"),
    "escaped quoted keys never assigned": mb('\\"token\\" '),
    "escaped quoted values never closed": mb('\\"token\\": \\"a'),
    ".env lines after escapes": mb("\\nPASSWORD=a b"),
    "tokens after escapes": mb("\\nghp_"),
    // a bare AWS secret beside its id; secret words in prose; invisible characters
    "AWS ids and base64 runs": mb("AKIAIOSFODNN7EXAMPLE " + "aB3".repeat(14) + " "),
    "a base64 run beside an AWS id, three = short": "AKIAIOSFODNN7EXAMPLE " + mb("aB3") + "===",
    "AWS ids only": mb("AKIAIOSFODNN7EXAMPLE/"),
    "secret is, chained": mb("secret is "),
    "secret then blanks": "secret" + mb(" ") + "is",
    "the password is and an open quote": mb('password is "a'),
    "passphrases and blanks, chained": mb("passphrase : "),
    "a secret word then blanks and a long run": "token" + mb(" ") + mb("a"),
    "mysql commands, chained": mb("mysql "),
    "a mysql command and a line that never has -p": "mysql" + mb(" -"),
    "mysql -p with an open quote": mb("mysql -p'"),
    "docker logins, chained": mb("docker login "),
    "sshpass and a line that never has -p": "sshpass" + mb(" -"),
    "net use shares, chained": "net use" + mb(" \\\\s"),
    "net use and a long share": "net use \\\\" + mb("s") + " " + mb("/user:a "),
    "mc alias set and blanks between words": "mc alias set" + mb(" a"),
    "mc alias set and a long word": "mc alias set a b " + mb("c"),
    "login calls, chained": mb('login("a", '),
    "login calls never closed": mb('login("a", "b'),
    "BasicAuth runs": mb("HTTPBasicAuth"),
    "vault kv put and pairs": "vault kv put" + mb(" a=b"),
    "vault kv puts, chained": mb("vault kv put "),
    "invisible characters between letters": mb("a\u200b"),
    "invisible characters alone": mb("\u200b"),
    // prose in other languages, header parameters, YAML blocks, XML elements, CLI options, token heads
    "qualified password names, chained": mb("passwort für a b c "),
    "Russian qualifiers, chained": mb("пароль от "),
    "CJK names and particles": mb("パスワードは"),
    "Authorization parameters, chained": mb("Authorization: Digest a=b, "),
    "Authorization and one run of parameters": "Authorization: Token " + mb("a="),
    "YAML block keys": mb("password: |\n"),
    "XML elements never closed": mb("<Password>a"),
    "CDATA opened, never closed": mb("<a><![CDATA[<"),
    "plist keys without a string": mb("<key>Password</key> "),
    "YAML block keys, then blank lines": "password: |" + mb("\n"),
    "redis-cli and a line that never has -a": "redis-cli" + mb(" -"),
    "smbclient users without %": mb("smbclient -U a"),
    "Terraform heads": mb("abcdefghijklmn.atlasv1."),
    "expect sends after a password prompt, never closed": 'expect "password:" ' + mb('send "a'),
    "SMTP AUTH PLAIN, chained": mb("AUTH PLAIN "),
    "net user names, chained": mb("net user a "),
    "SecureStrings never closed": mb('ConvertTo-SecureString "a'),
    "sudo -S here-strings, chained": mb("sudo -S <<< a "),
    "storage key values beside a keyName, chained": '{"keyName": "key1", ' +
      mb('"value": "' + "A".repeat(86) + "="),
    "a base64 run of secret words": btoa(mb("token=ab ", SIZE * 3 / 4)),
    "a base64 run of plain words, wrapped twice": btoa(btoa(mb("plain words ", SIZE / 4))),
    "base64 lines of 76, never decoding": mb("A".repeat(76) + "\n"),
    // session 10's second attack: CJK blanks, YAML values below, weak keys, commands, .pgpass, base64url
    "CJK names and blanks": mb("密码 "),
    "YAML keys, a value below, chained": mb("password:\n  "),
    "a YAML key, then indented blank lines": "token:" + mb("\n  "),
    "weak keys, chained": mb("key=a1b2c3d4e5 "),
    "echo and pipes, never --password-stdin": mb("echo a | "),
    "htpasswd flags, chained": "htpasswd" + mb(" -b"),
    "htpasswd commands, chained": mb("htpasswd -b a b "),
    ".pgpass lines of six fields": mb("a:1:b:c:d:e\n"),
    ".pgpass heads, chained": mb("a:1:b:c:"),
    "base64 lines of 76 joined by JSON escapes": mb("A".repeat(76) + "\\n"),
    "base64 lines of 70, neither width": mb("A".repeat(70) + "\n"),
    "base64 lines of 64, never decoding": mb("A".repeat(64) + "\n"),
    "base64url runs": mb("a_b-"),
    // session 12: disguised tokens (fullwidth, marks, escape sequences), CJK punctuation that folds
    "fullwidth password assignments": mb("ｐａｓｓｗｏｒｄ=ａ１ "),
    "fullwidth token heads": mb("ｇｈｐ＿"),
    "marks after ASCII": mb("a\u0301"),
    "escape sequences inside words": mb("ab\x1b[0m"),
    "escape sequences escaped in JSON": mb("ab\\u001b[0m"),
    "CJK text and its fullwidth punctuation": mb("密码，令牌：是"),
    // session 13: look-alike letters, JSON escapes
    "Cyrillic look-alikes": mb("раѕѕ "),
    "JSON escapes, chained": mb("p\\u0430"),
    "backslashes before no escape": mb("\\\\u"),
    "a run of backslashes": mb("\\"),
    "JSON escapes of breaks and quotes, chained": mb('a\\n\\"'),
    "halves of surrogate pairs escaped": mb("\\ud83d"),
    "secret-named strings and commas, chained": mb('"token", '),
    "secret-named calls, never closed": mb('setPassword("a'),
    "subscripted keys, chained": mb("ENV['TOKEN'] "),
    "secret-named options, chained": mb("--token a1 "),
    "key-like names and values, chained": mb("db_token a1b2c3d4e5 "),
    "here-strings after a secret's name": "token " + mb("<<< a1 "),
    // cookies, labels, PuTTY keys, Telegram tokens
    cookies: mb("Cookie: a=b; "),
    labels: mb("密码：密码："),
    putty: mb("Private-Lines: 1\nAAAA"),
    telegram: mb("123456789:"),
  };
  assertLinear("redact", redact, cases, BOUND_MS);
});

Deno.test("redact: every rule hides only what its hider is given, so a disguised text's offsets hold", () => {
  const same = (secret: string) => "\ue000".repeat(secret.length);
  for (const c of CREDENTIALS) {
    for (const [name, rule] of Object.entries(CREDENTIAL_RULES)) {
      if (name === "invisible-characters") continue;
      const out = rule(c.text, same);
      assertEquals(out.length, c.text.length, `${name} on ${JSON.stringify(c.text)}: ${JSON.stringify(out)}`);
    }
  }
});

Deno.test("redact: a disguised token is learned as written", () => {
  const seen = new Set<string>();
  assertEquals(
    redact("ｇｈｐ＿ＺＸ７ＤｆＬ３ＦｕｏＸｍｓＣ４ｖｙｎＮｄｗｉｆＶ０ｘｂ and ok", seen),
    `${REDACTED} and ok`,
  );
  assertEquals(
    redact("again ｇｈｐ＿ＺＸ７ＤｆＬ３ＦｕｏＸｍｓＣ４ｖｙｎＮｄｗｉｆＶ０ｘｂ.", seen),
    `again ${REDACTED}.`,
  );
});

Deno.test("redact: a bare base64 run is an AWS secret only beside an AWS key id", () => {
  const id = "AKIA" + "IOSFODNN7EXAMPLE";
  const key = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY";
  const sha = "3f2a9c1e7b4d5f60718293a4b5c6d7e8f9012345";
  assertEquals(redact(`${id} ${key}`), `${REDACTED} ${REDACTED}`);
  assertEquals(redact(`${key}\n${id}`), `${REDACTED}\n${REDACTED}`, "the secret before the id");
  assertEquals(
    redact(`${id} rotated in ${sha}`),
    `${REDACTED} rotated in ${sha}`,
    "a commit id is no secret",
  );
  const far = `${id}${" word".repeat(60)} ${key}`;
  assertEquals(redact(far), far.replace(id, REDACTED), "a run far from the id is not taken for its secret");
  assertEquals(redact(key), key, "no id, no AWS secret");
});

Deno.test("redact: a secret recognised once is redacted wherever it recurs in the texts that share `seen`", () => {
  const seen = new Set<string>();
  assertEquals(redact("my password is 'hunter2-Horse'", seen), `my password is '${REDACTED}'`);
  assertEquals(redact("PGPASSWORD=s3cr3t-Batt", seen), `PGPASSWORD=${REDACTED}`);
  const later = "Use hunter2-Horse (and s3cr3t-Batt) to log in; hunter2-Horsefly is a word.";
  assertEquals(
    redact(later, seen),
    `Use ${REDACTED} (and ${REDACTED}) to log in; hunter2-Horsefly is a word.`,
  );
  assertEquals(redact("Use hunter2-Horse to log in."), "Use hunter2-Horse to log in."); // nothing seen
  let secrets = ""; // one pass for all that are learned, not one per secret
  for (let i = 0; secrets.length < SIZE; i++) secrets += `pwd=pw${String(i).padStart(5, "0")}\n`;
  assertLinear("redact with seen", (t) => redact(t, new Set()), { "distinct secrets": secrets }, BOUND_MS);
});

Deno.test("redact: a secret an earlier capture learned is redacted by its print alone, bare only", () => {
  const seen = new Set<string>();
  redact("db_password=Tr0ub4dorXq9\nthe token: 'k3y-Pa55w0rd'", seen);
  const prints = new Set([...seen].map(secretPrint));
  assertTrue(
    [...prints].every((p) => !p.includes("Tr0ub") && !p.includes("Pa55")),
    "a print holds no secret",
  );
  assertEquals(
    redact(
      "retry Tr0ub4dorXq9, then (k3y-Pa55w0rd); xTr0ub4dorXq9 and Tr0ub4dorXq90 are words",
      undefined,
      prints,
    ),
    `retry ${REDACTED}, then (${REDACTED}); xTr0ub4dorXq9 and Tr0ub4dorXq90 are words`,
  );
  assertEquals(
    redact("overlapping Tr0ub4dorXq9Tr0ub4dorXq9", undefined, prints),
    "overlapping Tr0ub4dorXq9Tr0ub4dorXq9",
  );
  assertEquals(redact("é Tr0ub4dorXq9 😀", undefined, prints), `é ${REDACTED} 😀`);
  const damaged = new Set(["4000000000:1:2", "x:y", "12", ...prints]); // a state file's prints, damaged
  const from = performance.now();
  assertEquals(redact("retry Tr0ub4dorXq9", undefined, damaged), `retry ${REDACTED}`);
  assertTrue(performance.now() - from < 1000, "a print longer than the text costs nothing");
  const many = new Set(
    Array.from({ length: MAX_PRINTS }, (_, i) => secretPrint(`pw-${"x".repeat(i % 40)}-${i}`)),
  );
  assertLinear("redact with prints", (t) => redact(t, undefined, many), {
    "prose": mb("a word and another "),
    "one secret over and over": mb("pw-xx-2 "),
  });
});

Deno.test("redact: a <private> span's content (each line, ≥ 6 characters) is learned into `seen`", () => {
  const seen = new Set<string>();
  assertEquals(redact("My bank PIN is <private>4711-2231-9988</private>", seen), "My bank PIN is ");
  assertEquals(redact("Your PIN 4711-2231-9988 is safe.", seen), `Your PIN ${REDACTED} is safe.`);
  assertEquals(redact("<private> acct 99-1234\n  sort 40-11-22 </private>done", seen), "done");
  assertEquals(redact("acct 99-1234 / sort 40-11-22", seen), `${REDACTED} / ${REDACTED}`);
  assertEquals(redact("<private>abc</private> abc stays: too short", seen), " abc stays: too short");
  assertEquals(redact("<private>open to the end 55-66-77", seen), "");
  assertEquals(redact("it was open to the end 55-66-77", seen), `it was ${REDACTED}`);
  const none = new Set<string>();
  assertEquals(redact("<private>x</private><private></private>", none), "");
  assertEquals(none.size, 0);
});

Deno.test("a <private> span or cookie of 40 K characters is learned and its echo hidden, no regular expression too large", () => {
  const seen = new Set<string>();
  const span = Array.from({ length: 2000 }, (_, i) => `line ${i} of the contract`).join(" ");
  assertEquals(redact(`keep <private>${span}</private> out`, seen), "keep  out");
  assertEquals(redact(`the answer quotes ${span}.`, seen), `the answer quotes ${REDACTED}.`);
  const cookie = "v".repeat(40_000);
  assertEquals(redact(`Set-Cookie: sid=${cookie}; Path=/`, seen).includes(cookie), false);
  assertEquals(redact(`echo ${cookie}`, seen), `echo ${REDACTED}`);
  assertEquals(redact("sid=vv and xvvvvvvx stay", seen), "sid=vv and xvvvvvvx stay", "only bare recurrences");
});

Deno.test("redact: a JWT wrapped after its dots (a pasted, folded token) is hidden whole", () => {
  const sig = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
  const out = redact(`tok eyJhbGciOiJIUzI1NiJ9.\neyJzdWIiOiIxMjM0NTY3ODkwIn0.\n${sig}\nnext line`);
  assertEquals(out.includes(sig) || out.includes("eyJzdWIi"), false, out);
  assertEquals(out.endsWith("\nnext line"), true, out);
});

Deno.test("redact: a credential wrapped in base64 goes whole; base64 of plain text or bytes stays", () => {
  const b64 = (s: string) => btoa(s);
  const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
  for (
    const secret of [
      "AKIA" + "IOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789",
      "sk-" + "abcdefghijklmnopqrstuv12",
      jwt,
      "password=Tr0ub4dor&3",
      "base64 again: " + b64("ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"),
    ]
  ) {
    assertEquals(redact(`echo ${b64(secret)} | base64 -d`), `echo ${REDACTED} | base64 -d`, secret);
  }
  // `base64` wraps at 76 columns: the wrapped lines are one run
  const wrapped = b64("AKIA" + "IOSFODNN7EXAMPLE:" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".repeat(2))
    .replace(/.{76}/g, "$&\n");
  assertEquals(redact(`${wrapped}\ndone`), `${REDACTED}\ndone`);
  const pem = wrapped.replaceAll("\n", "").replace(/.{64}/g, "$&\n"); // `openssl base64` and PEM wrap at 64
  assertEquals(redact(`${pem}\ndone`), `${REDACTED}\ndone`);
  const plain = [
    b64("just an ordinary sentence, nothing secret in it"),
    b64(String.fromCharCode(...Array.from({ length: 48 }, (_, i) => (i * 37) & 255))),
    "/usr/local/share/applications/mimeinfo",
  ];
  for (const t of plain) assertEquals(redact(`data ${t} end`), `data ${t} end`);
});

Deno.test("redact: with `keep`, prints are looked for about as far as is kept, not in the whole text", () => {
  const text = "a".repeat(1 << 20);
  const whole = new NearPrint(secretPrint("aaaaaa"));
  assertEquals(redact(text, undefined, whole), text);
  assertEquals(whole.lookups, text.length - 5, "without keep, every position is looked up");
  const kept = new NearPrint(secretPrint("aaaaaa"));
  const head = redact(text, undefined, kept, 1000);
  assertTrue(text.startsWith(head) && head.trim().length > 1000, `${head.length}`);
  assertTrue(kept.lookups <= 2 * 1000 + 64, `${kept.lookups} lookups for 1000 characters kept`);
});

Deno.test("redact: with `keep`, the result is a prefix of the whole result, even where a secret spans the cut", () => {
  const seen = new Set<string>();
  redact("db_password=Tr0ub4dorXq9\nthe token: 'ab-ab-ab-ab'", seen);
  assertEquals(seen.size, 2);
  const prints = new Set([...seen].map(secretPrint));
  const texts = [
    `${"word ".repeat(30)}Tr0ub4dorXq9 ${"more ".repeat(40)}`,
    `  ${"ab-ab-ab-ab-".repeat(60)} Tr0ub4dorXq9 tail ${"x ".repeat(100)}`, // overlapping recurrences: one run
    `${" ".repeat(300)}Tr0ub4dorXq9${" ".repeat(300)}`,
    "Tr0ub4dorXq9",
  ];
  for (const text of texts) {
    const whole = redact(text, undefined, prints);
    assertTrue(whole.includes(REDACTED) && !whole.includes("Tr0ub"), whole);
    for (const keep of [0, 1, 5, 11, 12, 13, 40, 70, 150, 151, 1000]) {
      const head = redact(text, undefined, prints, keep);
      assertTrue(whole.startsWith(head), `keep ${keep}: ${JSON.stringify(head)}`);
      assertTrue(head === whole || head.trim().length > keep, `keep ${keep}: too short`);
    }
  }
});
