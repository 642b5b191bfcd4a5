/**
 * Real-format credentials, one or more per redaction rule (runtime/redact.ts), each as it appears in a
 * developer's terminal: the line it sits in and the secret that must not survive.
 */

/**
 * A credential sample: the rule that must catch it, the text it sits in, the secret itself, and its last
 * piece (what a redaction that stopped short would leave).
 */
export interface Credential {
  rule: string;
  text: string;
  secret: string;
  tail: string;
}

/** `text` with the secret, written in pieces, in it at `{}`. */
function sample(rule: string, text: string, ...secret: string[]): Credential {
  const s = secret.join("");
  return { rule, text: text.replace("{}", s), secret: s, tail: secret.at(-1)! };
}

const PGP = [
  "-----BEGIN PGP PRIVATE" + " KEY BLOCK-----",
  "",
  "lQVYBGVk3mEBDADQk7R0mJx8GvLq2sYcUo1pXn3KfWb5aH9dTe6ZrQ2Vj4Lm7Nc",
  "=Xb2k",
  "-----END PGP PRIVATE KEY BLOCK-----",
].join("\n");

/** Every sample; the first sixteen are the formats issue 20 found sent verbatim. */
export const CREDENTIALS: readonly Credential[] = [
  sample(
    "assignment",
    "[default]\naws_access_key_id = AKIA" +
      "B4XNGMU3N2ZJSP6Z\naws_secret_access_key = {}\nregion = eu-west-1",
    "yfPf6hgHG4sddOp3C3IB",
    "sy5hSKfOtSrnBdTgpo0M",
  ),
  sample("stripe", "charge with {} in test", "sk_live_", "KVX2lkoOeUCA1caMWnyI78JZ"),
  sample("stripe", "the restricted key {}", "rk_live_", "KVX2lkoOeUCA1caMWnyI78JZ"),
  sample(
    "jwt",
    "the session cookie is {}, decode it",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
  ),
  sample("private-key", `my key:\n{}\nwhy does gpg refuse it?`, PGP),
  sample(
    "url-userinfo",
    "DATABASE_URL=postgres://app:{}@db.internal:5432/app",
    "s3cr3t-",
    "pa55",
  ),
  sample(
    "url-userinfo",
    "connect with mongodb+srv://admin:{}@cluster0.ab1cd.mongodb.net/test and list the users",
    "Hunter2",
    "Pass",
  ),
  sample(
    "authorization",
    'curl -H "Authorization: Basic {}" https://api.example.com',
    "dXNlcjpw",
    "YXNzd29yZA==",
  ),
  sample("assignment", "db_password={}\ndb_host=localhost", "Tr0ub4dor", "&3xyz"),
  sample("gcp-api-key", "maps key {} in the app", "AIza", "LapgC2WJRqOgbl8wsASqsLmvM7AkptdtTNU"),
  sample("gitlab", "GITLAB_TOKEN is {}", "glpat-", "5iir4bKQ6e4XkvrpXQuf"),
  sample(
    "npm-access-token",
    "//registry.npmjs.org/:_authToken={}",
    "npm_",
    "gGDcohQYbi75e7oyHbJvnqPUJr9unTo4Adq9",
  ),
  sample("huggingface-access-token", "hf login with {}", "hf_", "cpibgRiqEBJKqkXXDXlicmhHwDEuUduvWy"),
  sample(
    "slack-webhook-url",
    "post to https://{} when done",
    "hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/",
    "TtGJA79kDCR5XHE1jlmmshmC",
  ),
  sample(
    "sendgrid-api-token",
    "SENDGRID key: {}",
    "SG.nc4xi4qzO3yuSfsMSHiEX-",
    ".gbc9UDYk8OA4mZlnx2YsMrKLUw3VRJBEQoaK_rR8BVM",
  ),
  sample(
    "assignment",
    "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net",
    "87+CgDMhcIwUgIyyHj9wDISPCG4JMameNNDxzyo2EBXpvq",
    "XujWLXzKUu87GJ/rWBWtFvhpCm1bIBpKbDmn+Swn==",
  ),
  sample(
    "ai-api-key",
    "OPENAI_API_KEY is {} for now",
    "sk-proj-PtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA-2O76UMFxFkM-R5Kjp1vRt_1fjORS-6ilI8T3Blbk",
    "FJihN5KXSc7Tvo-hBKqFYY-kv5ZJr3J1TWDtkwtDDb_xHKas1VOqg6YYZYn9ZhyiA4uoRgnatmUd",
  ),
  sample(
    "ai-api-key",
    "use {} please",
    "sk-ant-api03-",
    "LaOZ6gvp6QbjnlQGkMfdyCbudrNq1JnXmBEzCmMqXrk5_awyNZmLAUMsmaJhXVKY7mi8BbiRbwJLmafBAZkUK4grWYYGaAA",
  ),
  sample("ai-api-key", "perplexity {}", "pplx-", "UUSZjBjRuWc98zaApwqilvDGe7Tcga71iuAPF3vgDWW6RErQ"),
  sample("ai-api-key", "groq {}", "gsk_", "9HQN2uTFeorUb4NtkDZarfvqTG6saV4FmkthYu930I3dwkX2fsoR"),
  sample("aws-access-token", "the key id {} is active", "AKIA", "B4XNGMU3N2ZJSP6Z"),
  sample(
    "aws-amazon-bedrock-api-key",
    "AWS_BEARER_TOKEN_BEDROCK={}",
    "ABSKR64cXQLioDnkHIfxIq2HZt/PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGeb",
    "cy8F5n3/YNBDRzrZSgqbjG3uhkWKFLf6xuI5aHUQPFeNBTxaQWk8JzFalHlsZfYcMMD",
  ),
  sample(
    "google-oauth",
    "access token {}",
    "ya29.",
    "cHd5aOK86NgdekcN1J6Jk2jdYcHbiaOn-3nQdbpeD5FSVipiFG57-ff7kxuB",
  ),
  sample("google-oauth", "client secret {}", "GOCSPX-", "FzEKfqS6O4-aMpUzKswhDGwebnyn"),
  sample("azure-ad-client-secret", "the app secret is {}.", "86I", "8Q~Dh3FKQNFS_2iAAB~7Pt6Zids8B-g9Ga_x"),
  sample(
    "digitalocean",
    "doctl auth init -t {}",
    "dop_v1_",
    "141450c837151389439d373251dc01cbc5408a09fe8973358278e9972819295e",
  ),
  sample(
    "heroku-api-key-v2",
    "heroku token {}",
    "HRKU-AA",
    "WtuvsC77KXWe8mYkpfDEDXPgYaD8QAMbSFwKDf4S_3TyYIXVmKvIx2siFq",
  ),
  sample(
    "vault-token",
    "VAULT_TOKEN {}",
    "hvs.",
    "hJhvoDsc4odqSuAgH4HbZn7q3VxnUVMU7L_D2-1KlkdvkT2VgpAZv2oHsHSoEMBAY-912gw7pgyEAYEvuFZkBKaCoN",
  ),
  sample("vault-token", "an old vault token: {}", "s.fL9H2WjQ5T7Y", "4MyWuUFjsUNP"),
  sample("doppler-api-token", "doppler {}", "dp.pt.", "PFjvVl0BicLVbvZTYVVMOFx4lFQeBTQxaZhX0QULeqG"),
  sample("databricks-api-token", "databricks {}", "dapi", "39669107579d7dad45932b123cc920f8"),
  sample("github", "git push with {}", "ghp_", "ZX7DfL3FuoXmsC4vynNdwifV0xbWhEpIjsXU"),
  sample(
    "github",
    "the fine-grained {} one",
    "github_pat_",
    "aiRxwHjboBHCp7zySI1S6s_GMPTsNWXfPFrwViDQV2pFiw25u5O5JjOVSURRI6WhVrPcHmxznIGTt0EOl8",
  ),
  sample(
    "atlassian-api-token",
    "jira token {}",
    "ATATT3x",
    "jAWtGSU8po_799NksnRH9ucAUsdMlHUvTC=QCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9w3QlY7Zkuvqdt7s8Stqcbnr3yBdGBL=EPH1qhT61=qtc4xatws8phP9nhFyJfm=5di4P=zJ59=FHz5r1pY4OjE2jBMptUsGr7CmY_uCu3ZR1zTOlUc",
  ),
  sample(
    "pypi-upload-token",
    "password = {}",
    "pypi-AgEIcHlwaS5vcmc",
    "bE4R1PVklY8wIqjtfrDpdBlQEf_DrYn6GAgOYj2421pCFOmcyafRv1RgDtHM8KnPjD6CKb",
  ),
  sample("docker-hub-pat", "docker login -p {}", "dckr_pat_", "BWpAl4Z91ArlrY9h6FlXPikVqBf"),
  sample(
    "square-access-token",
    "square {}",
    "EAAA",
    "-OTNhnQbl9Sq4wsqoc_GLGLtrB-Ouk-20E2bfIWTgk5wm4GNPzfaBRlf_Qtd",
  ),
  sample("shopify", "shopify admin {}", "shpat_", "8d22bf724f9b28c6eda9c0bf5b0eefee"),
  sample("slack-token", "the bot token {}", "xoxb-", "123456789012-1234567890123-jqqgiteFcGcEEzT3GVQgP5i0"),
  sample(
    "discord-webhook-url",
    "curl https://{}",
    "discord.com/api/webhooks/123456789012345678/",
    "Z7iNoBANAK38mUFxVLtbQWsKqiweoJ1ly440fwwm-MuFJDpm53QEvh5ldKdGTHNZiUbh",
  ),
  sample("twilio-api-key", "twilio {}", "SK", "7a9e248396f28f4c21198415a1808df1"),
  sample("linear-api-key", "linear {}", "lin_api_", "Jrw9O2OxxbMKSkSzCVifK2jP9YsBWUJzuKHuRgN8"),
  sample(
    "postman-api-token",
    "postman {}",
    "PMAK-15bba76d66907c321cc849d3",
    "-e5cfe783858e06943140b90f685fe5b070",
  ),
  sample(
    "sentry-token",
    "SENTRY_AUTH_TOKEN {}",
    "sntryu_",
    "081708193424f7df3f2176661c3f86cfd3bc50dab87cad71b51a30a3e0af8eba",
  ),
  sample("grafana-token", "grafana {}", "glsa_", "BsGr0DMnN4U7shhZ1VlR0ECGDqiMbHuP_0329bda9"),
  sample(
    "age-secret-key",
    "# created: 2024-01-01\n{}",
    "AGE-SECRET-KEY-1",
    "V8LF0T6A6JYNVPW22L9NL995Q9FFDUC70LLUT8QA60ALL8TFFLDUR3LWWX",
  ),
  sample(
    "private-key",
    "id_ed25519:\n{}\n",
    "-----BEGIN OPENSSH PRIVATE" +
      " KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n",
    "-----END OPENSSH PRIVATE KEY-----",
  ),
  sample(
    "private-key",
    '{"private_key": "{}\\n", "client_email": "x@y.iam.gserviceaccount.com"}',
    "-----BEGIN PRIVATE" + " KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n",
    "-----END PRIVATE KEY-----",
  ),
  sample("bearer", "it sent Bearer {} and got 401", "abcdef0123", "456789xyz"),
  sample("user-option", "curl -u admin:{} https://ci.example.com/api", "Tr0ub4dor", "&3"),
  sample(
    "url-userinfo",
    "git clone https://x-access-token:{}@github.com/acme/app.git",
    "v1.27a7b3c4d5e6f",
    "7a8b9c0d1e2f3a4b5c6d7e8f9",
  ),
  sample("assignment", "export GITHUB_TOKEN={}", "0a1b2c3d4e5f", "6a7b8c9d"),
  sample("assignment", '{"client_secret": "{}", "client_id": "app"}', "Zq8", "-s3cr3t-V4lue"),
  sample("assignment", "db:\n  password: {}\n  user: app", "hunter2", "Xy"),
  sample("assignment", "mysql --password={} -h db", "Tr0ub4", "dor3"),
  sample("assignment", "spring.datasource.password={}", "P4ss", "word!"),
  sample("assignment", "GET /cb?code=1&access_token={}&state=x", "tok_abc", "123xyz789"),
  sample("assignment", "x-api-key: {}", "a1b2c3d4", "e5f6g7h8"),
  sample("assignment", '{"auths": {"registry.example.com": {"auth": "{}"}}}', "dXNlcjpw", "YXNzd29yZA=="),
  sample("assignment", "SECRET_KEY_BASE = {}", "9f8e7d6c", "5b4a3f2e1d0c"),
  sample("assignment", "PGPASSWORD={} psql -h db -U app", "pgpass", "Hunter77"),
  sample("assignment", "DBPASSWORD={} REDISPASSWORD=x ./run", "Sup3r", "S3cretPw"),
  sample("assignment", "run with REDISPASSWORD={} set", "r3dis", "Pa55word"),
  sample(
    "aws-secret-access-key",
    "my key is AKIA" + "IOSFODNN7EXAMPLE and secret {}, rotate both",
    "wJalrXUtnFEMI/K7MDENG/",
    "bPxRfiCYzEXAMPLEKEY",
  ),
  sample(
    "aws-secret-access-key",
    "{}\nAKIA" + "B4XNGMU3N2ZJSP6Z\n",
    "yfPf6hgHG4sddOp3C3IB",
    "sy5hSKfOtSrnBdTgpo0M",
  ),
  sample(
    "base64-wrapped",
    "echo {} | base64 -d > ~/.aws/key",
    "QUtJQUI0WE5HTVUzTjJaSlNQNlo6eWZQZjZoZ0hHNHNkZE9w",
    "M0MzSUJzeTVoU0tmT3RTcm5CZFRncG8wTQ==",
  ),
  sample("basic", "the proxy wants Basic {} on every call", "dXNlcjpodW50", "ZXIyaHVudGVyMg=="),
  sample("secret-in-prose", 'The secret is "{}", keep it safe', "hunter2", "hunter2"),
  sample("secret-in-prose", "my password was '{}' until today", "Tr0ub4", "dor&3"),
  sample("secret-in-prose-unquoted", "my password is {} now", "hunt", "er2"),
  sample("secret-in-prose-unquoted", "unlock it with passphrase {} please", "Tr0ub4", "dor&3"),
  sample("password-option", "mysql -u root -p{} db", "MyS3cr", "etPw"),
  sample("password-option", "docker login -u me -p {} registry.example.com", "Dk3r", "Pw55x"),
  sample("password-option", "sshpass -p '{}' ssh deploy@web1", "ss4h", "Pa55"),
  sample("password-option", "sshpass -p{} ssh deploy@web1", "ss4hGl", "ued55"),
  sample("ai-api-key", "XAI_KEY is {}", "xai-", "4Fk9sQ2LmZp8Rt6Wv3Yx1Bc7Nd0Hj5Gq"),
  sample("invisible-characters", "the key id {} is active", "AKIA\u200b", "IOSFODNN7EXAMPLE"),
  sample("invisible-characters", "push with {} please", "ghp_ZX7DfL3Fuo\u2060", "XmsC4vynNdwifV0xbWhEpIjsXU"),
  sample(
    "cookie",
    "curl -H 'Cookie: theme=dark; session_id={}' https://app.test",
    "9f8e7d6c5b4a",
    "3928Qx17Zk",
  ),
  sample("cookie", "< Set-Cookie: sid={}; Path=/; HttpOnly", "Q2xvdWRGbGFy", "ZQ9f8eKk31"),
  sample(
    "telegram-bot-api-token",
    "BOT_TOKEN {} in bot.py",
    "123456789:AAHdqTcvCH1vGW",
    "JxfSeofSAs0K5PALDsaw0",
  ),
  sample("secret-label", "数据库密码：{}，别告诉别人", "Hunter2", "Rover9x"),
  sample("secret-label", "password：{}", "Zq8Rt6", "Wv3Yx1"),
  sample(
    "hashicorp-tf-api-token",
    "terraform login keeps failing with {}",
    "Xq7Lm2Pz9Kt4Wv.atlasv1.",
    "Gh3Jk5Lm7Np9Qr2St4Uv6Wx8Yz0Ab1Cd3Ef5Gh7Jk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd",
  ),
  sample("pulumi-api-token", "pulumi says 401 for {}", "pul-", "3f9a0c4e7b2d18e6a5c09f3d7e41b28c6a0d9e5f"),
  sample(
    "flyio-access-token",
    "fly deploy with {} fails",
    "fo1_",
    "Zk3mQ9xT2vL7pR4wN8yB1cF6hJ0dG5sA3eK9uM2tXqW",
  ),
  sample("new-relic-user-api-key", "New Relic rejects {}", "NRAK-", "7QX2M4KD9B1ZC6VN8TR3LP5WHY0"),
  sample(
    "planetscale-api-token",
    "pscale auth with {} broke",
    "pscale_tkn_",
    "pQ7rT2vX9zB4nM6kL1jH8gF3dS5aW0eYc",
  ),
  sample("mailgun-private-api-token", "mailgun send fails: {}", "key-", "3f9a0c4e7b2d18e6a5c09f3d7e41b28c"),
  sample("alibaba-access-key-id", "aliyun cli with {} and the secret", "LTAI", "5tQ3xR8mK2vN7pL4wZ9c"),
  sample(
    "slack-token",
    "slackdump with {}",
    "xoxc-2345678901-3456789012-4567890123-",
    "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0",
  ),
  sample("slack-token", "the d cookie is {} here", "xoxd-PvFzq7%2BbP9kQm3", "%2FxY8wL1Hq%3D"),
  sample(
    "password-option",
    "redis-cli -h cache.internal -a {} ping gives NOAUTH",
    "R3disPa",
    "ssw0rdXq",
  ),
  sample("password-option", "zip -P {} backup.zip db.sql", "Z1pPass", "w0rdXq"),
  sample("password-option", "az login -u ops@example.com -p {} fails", "AzPass", "w0rd9Xq"),
  sample("password-option", "ssh-keygen -t ed25519 -N '{}' -f deploy", "K3yPass", "phr4seXq"),
  sample("password-option", "smbclient //fs/share -U admin%{}", "SmbPass", "w0rd9Xq"),
  sample("secret-label", "数据库的密码是{}，帮我连一下", "Hunter2", "Rover9"),
  sample("secret-label", "本番DBのパスワードは {} です。接続できません", "Tr0ub4", "dor3xQ"),
  sample("secret-label", "서버 비밀번호는 {} 입니다. 왜 접속이 안 되죠?", "Hunter2", "Rover9"),
  sample("secret-in-prose-unquoted", "Das Kennwort für die Datenbank ist {}, warum?", "Sommer2024", "!Blau"),
  sample("secret-in-prose-unquoted", "Kennwort: {}", "Sommer2024", "!Blau"),
  sample("secret-in-prose-unquoted", "mi contraseña es {} y no puedo entrar", "Verano2024", "!Azul"),
  sample("secret-in-prose-unquoted", "le mot de passe est {} mais ssh refuse", "Soleil2024", "!Bleu"),
  sample("secret-in-prose-unquoted", "minha senha é {} e o login falha", "Verao2024", "!Azul"),
  sample("secret-in-prose-unquoted", "мой пароль от сервера {}, почему не пускает?", "Qwerty2024", "!Zima"),
  sample("secret-in-prose-unquoted", "the password for prod is {}, why does login fail?", "Tr0ub4", "dor&3x"),
  sample(
    "authorization",
    `curl -H 'Authorization: Token token="{}"' https://api.example.com`,
    "Rails7",
    "TokenAbc123",
  ),
  sample(
    "authorization",
    'Authorization: Digest username="me", realm="x", response="{}"',
    "6629fae49393a053",
    "97450978507c4ef1",
  ),
  sample(
    "assignment",
    "values.yaml:\ndb:\n  password: |\n    {}\nwhy is it ignored?",
    "YamlBlock9",
    "SecretQ",
  ),
  sample("xml-element", "web.config has <password>{}</password> and IIS refuses it", "IisPass7", "Word9x"),
  sample(
    "putty-private-key",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 1\n" +
      "AAAAC3NzaC1lZDI1NTE5AAAAIKq5mS0v6eN8m3xWcY1Qp0nB4rT7uVzJ2dLhF9aK\nPrivate-Lines: 1\n{}\n" +
      "Private-MAC: 7c3f0e9b2a1d4c5e6f708192a3b4c5d6e7f8091a",
    "AAAAIFp3bQ9xKc2vT8mN1rY6sW4e",
    "L0uH7jG5dA3fB9zQyXoP",
  ),
];

/**
 * Ordinary code and prose that holds no secret, each left exactly as it is: a hex commit id, a UUID, a base64
 * image in a diff, `token` and `password` words in prose, code that names secrets without holding one, public
 * keys and certificates, URLs without a password.
 */
export const NOT_SECRETS: readonly string[] = [
  "fixed in commit 3f2a9c1e7b4d5f60718293a4b5c6d7e8f9012345 (short 3f2a9c1)",
  "request 550e8400-e29b-41d4-a716-446655440000 failed; retry 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
  "+![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
  '-  "integrity": "sha512-Yq0Dc0eu1oKpkVVyrJH/3Ryu9+Vd3MDzk+y2vZSTTbnpuEQhVeh+GdBmRJcvOPTW2jJvSbv/n/yoQeBcyQGCw==",',
  "The token budget is 2000 tokens; each token is about four characters of English.",
  "A password: it must be long. The token: a unit of text. Use Bearer authentication for the API.",
  "const tokens = tokenize(input); // split into tokens",
  "const token = await getToken(); headers.Authorization = `Bearer ${token}`;",
  'def login(password: str, token: str = None):\n    password = request.form["password"]\n    token = self.token',
  "max_tokens=4096, token_count: 12, TOKEN_LIMIT=8000, tokenizer_name = gpt2",
  "apiKey: process.env.OPENAI_API_KEY, secret: config.secret, password: string;",
  "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET\nexport TOKEN=${GITHUB_TOKEN}\nPASSWORD=$(pass show db)",
  'password_reset_url = "https://example.com/reset"\ntoken_url: https://oauth2.googleapis.com/token',
  "public_key = ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx3Bm8Pq1yv0vT2QJ4n6d8f0h2j4l6n8p0r2t4v6x8z user@host",
  "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
  "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG\n-----END CERTIFICATE-----",
  "git clone git@github.com:acme/app.git && open https://user@example.com/path?q=1&page=2",
  "PATH=/usr/local/bin:/usr/bin\nHOME=/home/user\nNODE_ENV=production",
  "primary_key=True, sort_key = id, author = Jane, secretary: Bob",
  "docker run -u 1000:1000 image@sha256:4f2a9c1e7b4d5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
  "I prefer the password manager 1Password. ask-for-help and task-12345 are fine.",
  "Use tabs, not spaces. PASSWORD_MIN_LENGTH=12 and the token is refreshed hourly.",
  "![](https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg) - (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
  's.makeKubeConfigController = args; credentialsId: "deploy-creds"; "bucket_key": "SalesResults-1.2"',
  'curl -sL --user "$GITHUB_USER:$GITHUB_PASSWORD" "$URL"; curl -u <user:password> https://example.com',
  "PGPASSFILE=~/.pgpass and PGPASSWORD_FILE=/run/secrets/pg; the bypass=1 and compass: north",
  'The secret is "out". The token is "${TOKEN}", the password is "<yours>" and the key is "id".',
  "the secret to this is patience, and the password was wrong twice. Basic usage: Basic authentication.",
  "Basic 12345678 and Basic QmFzaWNhbGx5 (no colon in either)",
  "\u{1F469}\u200d\u{1F4BB} pairs; a \u200b spaced word, \u0641\u0627\u200c\u0631\u0633 \u200f and \u{1F44D}\u{1F3FD}",
];
