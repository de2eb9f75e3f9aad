"""A labelled corpus for secret redaction: credentials that must be hidden and look-alikes that
must pass through untouched (issue 14). `measure()` gives precision and recall; `bench/redaction.py`
prints them for docs/reliability.md, `tests/text/test_secrets.py` holds the floor.

Each credential is a (kind, text, secret) triple: `secret` is the part that must not survive.
Each look-alike is a (kind, text) pair: the text must come out byte for byte. The fake keys are
made from a seeded hash, so this file holds no string a secret scanner would flag.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
DJANGO = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"  # get_random_secret_key's characters


def noise(n: int, alphabet: str = ALNUM, seed: str = "") -> str:
    """`n` characters of deterministic credential-looking noise."""
    out, counter = [], 0
    while len(out) < n:
        digest = hashlib.sha256(f"{seed}:{n}:{alphabet}:{counter}".encode()).digest()
        out += [alphabet[b % len(alphabet)] for b in digest]
        counter += 1
    return "".join(out[:n])


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _credentials() -> list[tuple[str, str, str]]:
    n = noise
    items: list[tuple[str, str, str]] = []

    def add(kind: str, template: str, secret: str) -> None:
        items.append((kind, template.format(s=secret), secret))

    # -- the 18 kinds the issue found reaching the prompt ------------------------------------
    add("hex-token", "my deploy token {s} expires in May", n(40, HEX, "hex1"))
    add("hex-api-key", "Heroku api key {s}", n(32, HEX, "hex2"))
    add("redis-url", "cache at redis://:{s}@cache.internal:6379/0", "Qx7" + n(12, seed="redis"))
    add("mysql-url", "DSN mysql://root:{s}@localhost:3306/app", "sunshine")
    add("password-plain-word", "password: {s}", "sunshine")
    add("password-quoted-spaces", 'password: "{s}"', "correct horse battery staple")
    add("huggingface-token", "HF: {s}", "hf_" + n(34, seed="hf"))
    add("gitlab-pat", "gitlab {s} (read_api)", "glpat-" + n(20, URLSAFE, "glpat"))
    add("npm-token", "//registry.npmjs.org/:_authToken={s}", "npm_" + n(36, seed="npm"))
    add(
        "sendgrid-key",
        "SendGrid key {s}",
        "SG." + n(22, URLSAFE, "sg1") + "." + n(43, URLSAFE, "sg2"),
    )
    add(
        "slack-webhook",
        "post to {s} on deploy",
        "https://hooks.slack.com/services/T0"
        + n(8, seed="t").upper()
        + "/B0"
        + n(8, seed="b").upper()
        + "/"
        + n(24, seed="w"),
    )
    add(
        "slack-app-token",
        "socket mode: {s}",
        "xapp-1-A0"
        + n(9, seed="a").upper()
        + "-"
        + n(13, "0123456789", "x")
        + "-"
        + n(64, HEX, "xapp"),
    )
    add(
        "http-basic-auth",
        "curl -H 'Authorization: Basic {s}' https://api.example.com",
        _b64("admin:" + n(12, seed="basic")),
    )
    add(
        "azure-account-key",
        "DefaultEndpointsProtocol=https;AccountName=notes;AccountKey={s};EndpointSuffix=core.windows.net",
        n(86, B64, "azure") + "==",
    )
    add(
        "telegram-bot-token",
        "bot token {s}",
        n(10, "0123456789", "tg") + ":AA" + n(33, URLSAFE, "tg"),
    )
    add("api-key-is", "the api key is {s} for staging", n(24, seed="apiis"))
    add("ssh-pass", "ssh-pass: {s}", "Tr0ub4dor&" + n(4, seed="ssh"))
    add("wifi-key-is", "wifi key is {s}", "Kx8" + n(10, seed="wifi"))

    # -- provider token shapes ----------------------------------------------------------------
    add("openai-key", "OPENAI {s}", "sk-" + n(48, seed="oa"))
    add("openai-project-key", "key {s}", "sk-proj-" + n(64, URLSAFE, "oap"))
    add("anthropic-key", "claude {s}", "sk-ant-api03-" + n(93, URLSAFE, "ant") + "AA")
    add("openrouter-key", "router {s}", "sk-or-v1-" + n(64, HEX, "or"))
    add("github-pat-classic", "gh {s}", "ghp_" + n(36, seed="ghp"))
    add("github-oauth", "oauth {s}", "gho_" + n(36, seed="gho"))
    add("github-app-token", "app {s}", "ghs_" + n(36, seed="ghs"))
    add(
        "github-fine-grained",
        "pat {s}",
        "github_pat_11A" + n(19, seed="gpat1") + "_" + n(59, seed="gpat2"),
    )
    add("gitlab-runner-token", "runner {s}", "glrt-" + n(20, URLSAFE, "glrt"))
    add("aws-access-key", "aws id {s}", "AKIA" + n(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "akia"))
    add("aws-secret-key", "aws_secret_access_key = {s}", n(40, B64, "awss"))
    add(
        "slack-bot-token",
        "bot {s}",
        "xoxb-"
        + n(12, "0123456789", "sb1")
        + "-"
        + n(13, "0123456789", "sb2")
        + "-"
        + n(24, seed="sb3"),
    )
    add(
        "slack-user-token",
        "user {s}",
        "xoxp-"
        + n(12, "0123456789", "su1")
        + "-"
        + n(12, "0123456789", "su2")
        + "-"
        + n(32, HEX, "su3"),
    )
    add("google-api-key", "maps {s}", "AIza" + n(35, URLSAFE, "gapi"))
    add("google-oauth-secret", "client secret {s}", "GOCSPX-" + n(28, URLSAFE, "gocspx"))
    add("google-oauth-access", "access {s}", "ya29." + n(60, URLSAFE, "ya29"))
    add("stripe-live-key", "stripe {s}", "sk_live_" + n(24, seed="skl"))
    add("stripe-restricted-key", "stripe {s}", "rk_live_" + n(24, seed="rkl"))
    add("stripe-webhook-secret", "webhook {s}", "whsec_" + n(32, seed="whsec"))
    add(
        "jwt",
        "session {s}",
        "eyJhbGciOiJIUzI1NiJ9.eyJ" + n(30, URLSAFE, "jwt1") + "." + n(43, URLSAFE, "jwt2"),
    )
    add("pypi-token", "twine {s}", "pypi-AgEIcHlwaS5vcmc" + n(60, URLSAFE, "pypi"))
    add("digitalocean-token", "do {s}", "dop_v1_" + n(64, HEX, "dop"))
    add("shopify-token", "shop {s}", "shpat_" + n(32, HEX, "shpat"))
    add("twilio-api-key", "twilio {s}", "SK" + n(32, HEX, "twilio"))
    add("mailgun-key", "mailgun {s}", "key-" + n(32, HEX, "mailgun"))
    add("mailchimp-key", "mailchimp {s}", n(32, HEX, "mc") + "-us21")
    add(
        "discord-webhook",
        "hook {s}",
        "https://discord.com/api/webhooks/"
        + n(18, "0123456789", "dw")
        + "/"
        + n(68, URLSAFE, "dw2"),
    )
    add("atlassian-token", "jira {s}", "ATATT3xFfGF0" + n(180, URLSAFE, "atl"))
    add("linear-key", "linear {s}", "lin_api_" + n(40, seed="lin"))
    add("notion-token", "notion {s}", "ntn_" + n(46, seed="ntn"))
    add("postman-key", "postman {s}", "PMAK-" + n(24, HEX, "pm1") + "-" + n(34, HEX, "pm2"))
    add("vault-token", "VAULT {s}", "hvs." + n(90, URLSAFE, "hvs"))
    add(
        "age-secret-key",
        "age {s}",
        "AGE-SECRET-KEY-1" + n(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", "age").upper(),
    )
    add("databricks-token", "dbx {s}", "dapi" + n(32, HEX, "dapi"))
    add("grafana-token", "grafana {s}", "glsa_" + n(32, seed="glsa") + "_" + n(8, HEX, "glsa2"))
    add("newrelic-key", "nr {s}", "NRAK-" + n(27, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "nrak"))
    add("sentry-token", "sentry {s}", "sntrys_" + n(120, URLSAFE, "sntrys"))
    add("replicate-token", "replicate {s}", "r8_" + n(37, seed="r8"))
    add("groq-key", "groq {s}", "gsk_" + n(52, seed="gsk"))
    add("perplexity-key", "pplx {s}", "pplx-" + n(48, seed="pplx"))
    add("xai-key", "grok {s}", "xai-" + n(80, seed="xai"))
    add("square-token", "square {s}", "sq0atp-" + n(22, URLSAFE, "sq0"))
    add(
        "tailscale-key",
        "tailscale {s}",
        "tskey-auth-" + n(17, seed="ts1") + "-" + n(33, seed="ts2"),
    )
    add("doppler-token", "doppler {s}", "dp.st.dev." + n(43, seed="dp"))
    add("pulumi-token", "pulumi {s}", "pul-" + n(40, HEX, "pul"))
    add("supabase-token", "supabase {s}", "sbp_" + n(40, HEX, "sbp"))

    # -- issue 35: shapes the rules missed ---------------------------------------------------
    tg_id = n(9, "0123456789", "tg2")
    add(
        "telegram-bot-api-url",
        "curl https://api.telegram.org/bot{s}/getUpdates",
        tg_id + ":AA" + n(33, URLSAFE, "tg3"),
    )
    add(
        "telegram-bot-env",
        "TELEGRAM_BOT_TOKEN={s}",
        n(10, "0123456789", "tg4") + ":AA" + n(33, URLSAFE, "tg5"),
    )
    add(
        "telegram-bot-8-digits",
        "the bot: {s}",
        n(8, "0123456789", "tg6") + ":AA" + n(33, URLSAFE, "tg7"),
    )
    add(
        "telegram-bot-other-start",
        "token {s}",
        n(10, "0123456789", "tg8") + ":Bx" + n(33, URLSAFE, "tg9"),
    )
    discord_id = base64.urlsafe_b64encode(n(18, "0123456789", "dsc").encode()).decode().rstrip("=")
    add(
        "discord-bot-token",
        "DISCORD_TOKEN={s}",
        discord_id + "." + n(6, URLSAFE, "dsc2") + "." + n(38, URLSAFE, "dsc3"),
    )
    add(
        "discord-bot-token-prose",
        "the bot logs in with {s} on start",
        base64.b64encode(b"1" + n(18, "0123456789", "dsc4").encode()).decode().rstrip("=")
        + "."
        + n(6, URLSAFE, "dsc5")
        + "."
        + n(27, URLSAFE, "dsc6"),
    )
    add("slack-refresh-token", "refresh {s}", "xoxe-1-" + n(140, seed="xoxe"))
    add("huggingface-org-token", "org token {s}", "api_org_" + n(34, seed="hforg"))
    add(
        "mapbox-secret-token",
        "mapbox {s}",
        "sk.eyJ1IjoiYWxpY2UiLCJhIjoi" + n(20, URLSAFE, "mb1") + "." + n(22, URLSAFE, "mb2"),
    )
    add("docker-hub-pat", "docker login -p {s}", "dckr_pat_" + n(27, URLSAFE, "dckr"))
    add("figma-token", "figma {s}", "figd_" + n(40, URLSAFE, "figd"))
    add("airtable-pat", "airtable {s}", "pat" + n(14, seed="at1") + "." + n(64, HEX, "at2"))
    add("heroku-token", "heroku {s}", "HRKU-" + n(60, URLSAFE, "hrku"))
    add("dropbox-token", "dropbox {s}", "sl." + n(135, URLSAFE, "dbx"))
    add("netlify-token", "netlify {s}", "nfp_" + n(40, seed="nfp"))
    add("fly-token", "FLY_API_TOKEN='FlyV1 {s}'", "fm2_" + n(120, URLSAFE, "fly"))
    add("twitter-bearer-token", "X bearer {s}", "A" * 21 + n(90, ALNUM + "%", "tw"))
    add("facebook-token", "graph token {s}", "EAA" + n(150, seed="fb"))

    # -- private keys -------------------------------------------------------------------------
    body = "\n".join(n(64, B64, f"rsa{i}") for i in range(4))
    add(
        "rsa-private-key",
        "deploy key:\n{s}\nrotate monthly",
        f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----",
    )
    add(
        "openssh-private-key",
        "{s}",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----",
    )
    add(
        "pgp-private-key",
        "{s}",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n-----END PGP PRIVATE KEY BLOCK-----",
    )
    add(
        "putty-private-key",
        "{s}",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\nPublic-Lines: 2\n"
        + body
        + "\nPrivate-Lines: 1\n"
        + n(44, B64, "ppk")
        + "\nPrivate-MAC: "
        + n(64, HEX, "ppkmac"),
    )

    # -- named by their key ---------------------------------------------------------------------
    add("password-key-value", "db password = {s}", "Tr0ub4dor&3")
    add("env-password", "PGPASSWORD={s} psql -h db", "Zq8" + n(9, seed="pg"))
    add("env-secret", "export APP_SECRET={s}", n(32, seed="appsecret"))
    add("django-secret-key", "SECRET_KEY = '{s}'", "django-insecure-" + n(40, seed="dj"))
    add("json-api-key", '{{"api_key": "{s}"}}', n(20, seed="jsonapi"))
    add("yaml-client-secret", "client_secret: {s}", n(24, seed="yamlcs"))
    add(
        "netrc-password",
        "machine api.example.com login alice password {s}",
        "Vx9" + n(11, seed="netrc"),
    )
    add(
        "curl-user-password",
        "curl -u alice:{s} https://api.example.com",
        "Vx9" + n(11, seed="curlu"),
    )
    add(
        "docker-auth",
        '"auths": {{"ghcr.io": {{"auth": "{s}"}}}}',
        _b64("alice:" + n(20, seed="docker")),
    )
    add(
        "azure-sas-signature",
        "https://notes.blob.core.windows.net/c?sv=2022-11-02&sig={s}",
        n(43, B64, "sas") + "%3D",
    )
    add(
        "azure-shared-access-key",
        "Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={s}",
        n(43, B64, "sak") + "=",
    )
    add("gcp-private-key-id", '"private_key_id": "{s}",', n(40, HEX, "gcp"))
    add("bearer-token", "Authorization: Bearer {s}", n(32, HEX, "bearer"))
    add("postgres-url", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", "s3cr3tPa55")
    add("zh-password", "路由器密码：{s}", "Abc12345!")
    add("zh-password-is", "服务器密码是 {s}", "Admin@2024")
    add("zh-secret", "密钥={s}", "K9x2LmQ7pZ")
    add("pin-password", "pin password: {s}", "482915")

    # -- issue 43: credentials told by their label, in any language and layout ---------------
    aws_id = "AKIA" + n(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "akia43")
    add("aws-pair-space", f"{aws_id} {{s}}", n(40, B64, "aws43a"))
    add("aws-pair-csv", f"Access key ID,Secret access key\n{aws_id},{{s}}", n(40, B64, "aws43b"))
    add("aws-pair-slash", f"key / secret: {aws_id} / {{s}}", n(40, B64, "aws43c"))
    add("aws-pair-prose", f"key {aws_id}, the secret is {{s}}", n(40, B64, "aws43d"))
    add("aws-pair-zh", f"AWS 账号 {aws_id} 密钥 {{s}}", n(40, B64, "aws43e"))
    add("django-secret-key-paren", "SECRET_KEY = '{s}'", "django-insecure-" + n(50, DJANGO, "dj43"))
    add("rails-secret-key-base", "SECRET_KEY_BASE={s}", n(128, HEX, "rails"))
    add("laravel-app-key", "APP_KEY=base64:{s}", n(43, B64, "laravel") + "=")
    add("kubeconfig-client-key-data", "    client-key-data: {s}", n(120, B64, "kckey"))
    add("kubeconfig-client-cert-data", "    client-certificate-data: {s}", n(120, B64, "kcc"))
    add("kubeconfig-token", "    token: {s}", n(6, HEX, "kbt1") + "." + n(16, HEX, "kbt2"))
    add("mysql-glued-password", "mysql -uroot -p{s} app", "Zq8" + n(9, seed="mysqlp"))
    add("sshpass-password", "sshpass -p {s} ssh deploy@10.0.0.5", "Hx4" + n(9, seed="sshpass"))
    add("redis-cli-password", "redis-cli -h cache -a {s} ping", "Rd7" + n(9, seed="rediscli"))
    add("zh-wifi-space", "WiFi 密码 {s}", "Kx8" + n(9, seed="wifizh"))
    add("zh-mail-glued", "邮箱密码{s}", "Mq3" + n(9, seed="mailzh"))
    add("zh-label-no-colon-hex", "支付接口密钥 {s}", n(32, HEX, "payzh"))
    add("aliyun-access-key-id", "AccessKey ID {s}", "LTAI" + n(20, seed="ltai"))
    add("aliyun-pair", "LTAI" + n(20, seed="ltai2") + " {s}", n(30, seed="ltaisecret"))
    add(
        "telegram-bot-token-docs-length",
        "bot token {s}",
        n(9, "0123456789", "tg43") + ":AA" + n(32, URLSAFE, "tg43"),
    )
    # shapes and layouts the issue did not name: other tools, other clouds, other file formats
    add("tencent-secret-id", "SecretId: {s}", "AKID" + n(32, seed="akid"))
    add("tencent-pair", "AKID" + n(32, seed="akid2") + ",{s}", n(32, seed="tcsecret"))
    add("mongo-password", "mongosh -u admin -p {s} --authenticationDatabase admin", "Mg5" + n(9))
    add("sqlcmd-password", "sqlcmd -S db -U sa -P {s}", "Sq2" + n(9, seed="sqlcmd"))
    add("docker-login-password", "docker login -u alice -p {s} registry.example.com", "Dk6" + n(9))
    add("keytool-storepass", "keytool -list -keystore app.jks -storepass {s}", "Kt9" + n(9))
    add("openssl-passin", "openssl rsa -in key.pem -passin pass:{s}", "Os1" + n(9, seed="ossl"))
    add("smbclient-user-password", "smbclient //nas/share -U alice%{s}", "Sm4" + n(9, seed="smb"))
    add("sqlplus-password", "sqlplus scott/{s}@orcl", "Tg8" + n(9, seed="sqlplus"))
    add("7z-glued-password", "7z x backup.7z -p{s}", "Zz3" + n(9, seed="7z"))
    add("ldap-bind-password", "ldapsearch -x -D cn=admin,dc=example,dc=org -w {s}", "Ld5" + n(9))
    add("xfreerdp-password", "xfreerdp /u:alice /p:{s} /v:10.0.0.9", "Rp7" + n(9, seed="rdp"))
    add("gpg-passphrase-flag", "gpg --batch --passphrase {s} -c notes.tar", "Gp2" + n(9))
    add(
        "mount-cifs-password",
        "mount -t cifs //nas/share /mnt -o username=alice,password={s}",
        "Ci3" + n(9),
    )
    add("xml-password", "<password>{s}</password>", "Xm4" + n(9, seed="xml"))
    add(
        "connection-string-password",
        "Server=db;Database=app;User Id=sa;Password={s};",
        "Cs5" + n(9),
    )
    add("php-array-password", "'password' => '{s}',", "Ph6" + n(9, seed="php"))
    add("java-properties-password", "spring.datasource.password={s}", "Jp7" + n(9, seed="java"))
    add("go-struct-password", 'Password: "{s}",', "Go8" + n(9, seed="go"))
    add("dockerfile-env-password", "ENV DB_PASSWORD {s}", "Df9" + n(9, seed="dockerfile"))
    add("compose-env-password", "      - MYSQL_ROOT_PASSWORD={s}", "Dc1" + n(9, seed="compose"))
    add("markdown-table-password", "| prod db | password | {s} |", "Tb2" + n(9, seed="table"))
    add("camel-app-secret", "appSecret: {s}", n(32, seed="appsecret43"))
    add("camel-access-token", "accessToken = '{s}'", n(40, URLSAFE, "accesstoken"))
    add("zh-auth-code", "QQ 邮箱授权码：{s}", n(16, "abcdefghijklmnopqrstuvwxyz", "qqauth"))
    add("zh-password-changed-to", "数据库密码改成了 {s}", "Db3" + n(9, seed="zhchanged"))
    add("zh-token-wei", "令牌为{s}", n(32, seed="zhtoken"))
    add("zh-koling-space", "口令 {s}", "Kl4" + n(9, seed="koling"))
    add("zh-private-key-label", "私钥：{s}", n(64, B64, "zhpriv"))
    add("password-changed-to", "the password was changed to {s}", "Pc5" + n(9, seed="changed"))
    add("token-is-now", "the api token is now {s}", n(32, seed="tokennow"))
    add("credentials-label", "credentials: {s}", "Cr6" + n(13, seed="creds"))
    add("flag-api-token", "deploy --api-token {s} --env prod", n(32, seed="flagtoken"))

    # -- known misses, counted so the figures stay honest ------------------------------------
    add(
        "password-is-plain-word", "the password is {s}", "sunshine"
    )  # prose-shaped: "is" + plain word
    add(
        "unnamed-random-token", "use {s} for the staging API", n(24, seed="unnamed")
    )  # no shape, no key
    add(
        "password-after-word", "the router's password reads {s}", "Kx8" + n(9, seed="reads")
    )  # a verb as the separator: caught since issue 43
    return items


def _lookalikes() -> list[tuple[str, str]]:
    n = noise
    sha = n(40, HEX, "sha")
    png = _b64("\x89PNG\r\n\x1a\n" + n(300, seed="png"))
    items = [
        ("git-sha-prose", f"Fixed in commit {sha}, see the log."),
        ("git-sha-zh", f"提交记录 {n(40, HEX, 'sha2')}"),
        ("git-sha-short", f"reverted {sha[:7]} and {n(7, HEX, 'sha3')}"),
        ("git-sha-merge", f"Merge {sha} into main"),
        ("git-sha-url", f"https://github.com/alice/notes/commit/{sha}"),
        ("git-sha-tree", f"tree {n(40, HEX, 'tree')}\nparent {sha}"),
        ("sha256-digest", f"sha256sum: {n(64, HEX, 'sum')}  notes.tar.gz"),
        ("docker-digest", f"image@sha256:{n(64, HEX, 'img')}"),
        ("md5-checksum", f"md5 {n(32, HEX, 'md5')} of the backup"),
        ("npm-integrity", f'"integrity": "sha512-{n(86, B64, "integ")}=="'),
        ("uuid", "Note id 3f6c2a9e-8b1d-4c7e-9a5f-0d2e4b6c8a1f in the database."),
        ("uuid-upper", "GUID {3F6C2A9E-8B1D-4C7E-9A5F-0D2E4B6C8A1F}"),
        ("uuid-in-url", "https://app.example.com/boards/3f6c2a9e-8b1d-4c7e-9a5f-0d2e4b6c8a1f"),
        ("base64-image", f"![chart](data:image/png;base64,{png})"),
        ("base64-html-image", f'<img src="data:image/jpeg;base64,{_b64(n(200, seed="jpg"))}">'),
        ("long-word-de", "Donaudampfschifffahrtsgesellschaftskapitän ist ein langes Wort."),
        ("long-word-en", "antidisestablishmentarianism and supercalifragilisticexpialidocious"),
        (
            "long-identifier",
            "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor is a class",
        ),
        ("snake-identifier", "call get_user_password_reset_token_expiry_seconds() first"),
        (
            "ssh-public-key",
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{n(43, B64, 'pub')} alice@laptop",
        ),
        (
            "pgp-public-key",
            f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{n(64, B64, 'pgp')}\n-----END PGP PUBLIC KEY BLOCK-----",
        ),
        (
            "public-key-pem",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
        ),
        ("ethereum-address", f"send to 0x{n(40, HEX, 'eth')}"),
        ("bitcoin-address", "donations: bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
        ("css-color", "the accent colour is #1e90ff, the border #ccc"),
        ("ipv6", "listen on 2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
        ("mac-address", "the router's MAC is 00:1A:2B:3C:4D:5E"),
        ("semver", "upgraded from 1.24.3 to 2.0.0-rc.1+build.5"),
        ("email", "mail alice.longname+notes@example-company.com"),
        ("url-user-only", "clone ssh://git@github.com/alice/notes.git"),
        ("url-no-auth", "docs at https://docs.example.com:8443/v2/api?page=3#auth"),
        ("url-placeholder-password", "postgres://user:${DB_PASSWORD}@localhost/app"),
        ("url-template-password", "mysql://root:<password>@localhost/app"),
        ("path", "/home/alice/.config/cmem/keys/README.md"),
        ("windows-path", r"C:\Users\alice\AppData\Roaming\Obsidian\obsidian.json"),
        ("password-prose", "The password policy says passwords rotate every 90 days."),
        ("password-required", "password: required"),
        ("password-see", "Password: see the team vault."),
        ("password-is-wrong", "the password is incorrect, try again"),
        ("password-env-ref", "password: ${DB_PASSWORD}"),
        ("password-stars", "password: ********"),
        ("password-template", "password: <your password here>"),
        ("password-manager", "I keep my api key in 1Password, not in notes."),
        ("api-key-code", "api_key = os.environ['OPENAI_API_KEY']"),
        ("token-count", "max_tokens=4096, token_limit: 100000"),
        ("token-budget", "budget_tokens: 120000"),
        ("token-prose", "the token is valid for thirty days"),
        ("secret-prose", "The secret: nobody reads the docs."),
        ("secret-santa", "secret santa at the office on Friday"),
        ("secret-path", "secret: /run/secrets/db_password"),
        ("key-prose", "the key is consistency, not intensity"),
        ("wifi-key-prose", "the wifi key is on the fridge"),
        ("bearer-prose", "The Authorization header uses Bearer tokens."),
        ("basic-prose", "Basic authentication is deprecated; use Bearer tokens instead."),
        ("account-key-prose", "AccountKey is the field you copy from the Azure portal."),
        (
            "prefix-prose",
            "AKIA is the prefix of AWS access key ids; ghp_ of GitHub tokens; sk-ant- of Anthropic's.",
        ),
        ("jwt-prose", "JWTs start with eyJ because of base64."),
        ("sklearn", "sklearn and sk-learn are the same library; the risk-of-bias tool too."),
        ("hf-function", "use hf_hub_download(repo_id, filename) to fetch it"),
        ("npm-config", "npm_config_cache and npm_package_version are set by npm"),
        ("telegram-handle", "message me at t.me/alice_notes or @alice_bot"),
        ("slack-channel-url", "https://app.slack.com/client/T0123ABCD/C0456EFGH"),
        ("time-and-ratio", "meeting 10:30-11:45, ratio 16:9, score 3:1"),
        ("phone-number", "call +1 (415) 555-0132 or +86 138 0013 8000"),
        ("isbn", "ISBN 978-3-16-148410-0"),
        ("chinese-prose", "我的密码策略是每三个月换一次。密码：见 1Password"),
        ("chinese-token-bucket", "令牌桶算法限制速率，token 用量每天 12000。"),
        ("obsidian-block-id", "a statement ^a1b2c3 and a link [[2024-05-01#^f00ba4]]"),
        ("cron", "schedule: '*/15 3-5 * * 1-5'"),
        ("stack-address", "segfault at 0x00007ffd5e8c3a10 in libc.so.6"),
        ("gpg-key-id", "signed with key 3AA5C34371567BD2"),
        ("hex-color-list", "palette: ff6b6b 4ecdc4 45b7d1 96ceb4 ffeaa7"),
        ("base64-config", f"cert_fingerprint: SHA256:{n(43, B64, 'fp')}"),
        ("key-commit-sha", f"The key commit {n(40, HEX, 'keysha')} fixed it."),
        ("boarding-pass", "boarding pass: through gate 4"),
        ("password-is-stored", "the api key is stored in the vault, the password is required"),
        ("wikilink-long", "[[Project Aurora – retrospective and lessons learned (2024)]]"),
        # issue 35: near misses of the shapes added for it
        ("timestamp-colon", "at 1733140800: deployed, 1733140801:ok, build 20241202:rc1"),
        ("bot-in-prose", "ask the bot123456789 account: it answers in 10:30 minutes"),
        ("dotted-identifier", "com.example.notes.MainActivity.onCreate.savedInstanceState"),
        (
            "discord-shaped-not-base64-id",
            f"ref MTxyz{n(20, seed='dl1')}.{n(6, seed='dl2')}.{n(30, seed='dl3')}",
        ),
        ("scream", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!"),
        (
            "mapbox-public-token",
            f"pk.eyJ1IjoiYWxpY2UiLCJhIjoi{n(20, URLSAFE, 'pk')}.{n(22, URLSAFE, 'pk2')}",
        ),
        ("pattern-words", "patterns, patience and path.names are not airtable tokens"),
        ("serial-number", "serial no. sl.12 and fm2 radio, EAAS for the grant"),
        ("figma-prose", "figd_ is the prefix of Figma tokens; dckr_pat_ of Docker's"),
        # issue 43: near misses of the labels, layouts and flags added for it
        ("key-point", "the key point is that notes stay plain text"),
        ("key-takeaways", "key takeaways: write the test first, then the fix"),
        ("zh-cryptography-course", "密码学课程下周开始，WiFi 密码在冰箱上，密码 6 位"),
        ("token-economy", "the token economy is a bad idea; token v2.4.1 ships the fix"),
        ("secret-sauce", "It's our secret sauce! The secret is out."),
        ("hex-commit-unnamed", f"merged a1b2c3d into main, then {n(40, HEX, 'merge43')}"),
        ("uuid-request-id", "request id 123e4567-e89b-12d3-a456-426614174000 failed twice"),
        ("url-user-no-password", "https://alice@example.com/notes and ftp://ftp.example.com/pub"),
        ("monkey-hotkey", "monkey: 12 bananas, hotkey: ctrl+shift+k, turkey 2024"),
        ("database-keys", "primary key: user_id, sort key: created_at2, foreign_key = order_id9"),
        (
            "public-key-field",
            f"public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{n(43, B64, 'pk43')}",
        ),
        ("page-token", f"next_page_token: {n(40, URLSAFE, 'page43')}"),
        ("docker-port-flag", "docker run -p 8080:80 -p 8443:443 nginx"),
        ("mysql-asks-password", "mysql -u root -p app_db; ssh -p 2222 alice@host; psql -p 5432"),
        ("key-file-flag", "curl --cert client.pem --key client-key.pem https://api.example.com"),
        ("password-arrow", "password -> hashed with bcrypt, token → cached"),
        ("table-header", "| service | user | password | notes |"),
        ("zh-private-key-file", "私钥文件在 ~/.ssh/id_ed25519，密钥长度 4096"),
        ("key-value-store", "key-value store: redis; API key rotation: every 90 days"),
        ("sqlplus-sysdba", "sqlplus / as sysdba, then sqlplus /nolog"),
        ("7z-output-flag", "7z x archive.7z -o./out -y"),
        ("ltai-prose", "LTAI is the prefix of Aliyun AccessKey ids, AKID of Tencent's"),
        ("xml-placeholder", "postgres://user:<password>@localhost and <token> tags"),
        ("password-field-verb", "the password field is required and the token was revoked"),
    ]
    return items


CREDENTIALS = _credentials()
KNOWN_MISSES = frozenset({"password-is-plain-word", "unnamed-random-token"})
LOOKALIKES = _lookalikes()


@dataclass
class Measure:
    true_positives: int = 0
    false_negatives: list[str] = field(default_factory=list)  # kinds whose secret survived
    false_positives: list[str] = field(default_factory=list)  # look-alikes that were changed
    credentials: int = 0
    lookalikes: int = 0

    @property
    def recall(self) -> float:
        return self.true_positives / self.credentials if self.credentials else 1.0

    @property
    def precision(self) -> float:
        flagged = self.true_positives + len(self.false_positives)
        return self.true_positives / flagged if flagged else 1.0


def measure(redact) -> Measure:
    """Run `redact(text) -> (text, count)` over the corpus. A credential counts as caught when no
    piece of its secret (any line of it) survives; a look-alike is a false positive when its
    text changes at all."""
    result = Measure(credentials=len(CREDENTIALS), lookalikes=len(LOOKALIKES))
    for kind, text, secret in CREDENTIALS:
        out, count = redact(text)
        pieces = [line for line in secret.splitlines() if len(line) >= 6] or [secret]
        if count and not any(piece in out for piece in pieces):
            result.true_positives += 1
        else:
            result.false_negatives.append(kind)
    for kind, text in LOOKALIKES:
        if redact(text)[0] != text:
            result.false_positives.append(kind)
    return result
