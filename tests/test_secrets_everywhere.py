"""No planted secret in any byte: every kind, through every entry path, scanned in every file written.

Each entry path gets its own fake secret of each kind (derived from the path's name), so a leak
names both the path and the kind. After everything is recorded, folded, exported and queried,
every file under ``TRAIL_HOME``, the ledger folder and the export folder is read whole (names
too) and searched for each secret and its base64 form. The figures (planted / held) are
printed, and the test fails on the first leak it lists. On PostgreSQL (its own file, so the two
run side by side), every row of every table of the ledger's schema is read too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import REPO, run_here

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEXDIGITS = "0123456789abcdef"


def rnd(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters that look random, the same for the same seed."""
    out, counter = [], 0
    while len(out) < n:
        for byte in hashlib.sha256(f"{seed}:{counter}".encode()).digest():
            out.append(alphabet[byte % len(alphabet)])
        counter += 1
    return "".join(out[:n])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kinds(path: str) -> dict[str, tuple[str, list[str]]]:
    """Kind -> (the text planted, the secrets that must not appear) for one entry path."""
    s = lambda kind, n=32, alphabet=ALNUM: rnd(f"{path}/{kind}", n, alphabet)  # noqa: E731
    key_lines = [s(f"pk{i}", 64, ALNUM + "+/") for i in range(4)]
    inner = "sk-ant-api03-" + s("b64inner", 40)
    hook_url = f"T{s('whT', 8).upper()}/B{s('whB', 8).upper()}/{s('wh', 24)}"
    sa_id = s("sa", 40, HEXDIGITS)
    table = {
        "openai-key": ("sk-proj-" + s("openai", 40), None),
        "anthropic-key": ("sk-ant-api03-" + s("anthropic", 40), None),
        "github-token": ("ghp_" + s("ghp", 36), None),
        "github-pat": ("github_pat_11" + s("pat", 59), None),
        "aws-access-key": ("AKIA" + s("akia", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), None),
        "aws-secret": (s("awssecret", 40, ALNUM + "+/"), "aws_secret_access_key = {}"),
        "slack-token": (f"xoxb-{s('sl1', 12, '0123456789')}-{s('sl2', 24)}", None),
        "slack-webhook": (hook_url, "https://hooks.slack.com/services/{}"),
        "npm-token": ("npm_" + s("npm", 36), None),
        "stripe-key": ("sk_live_" + s("stripe", 28), None),
        "google-api-key": ("AIza" + s("gapi", 35), None),
        "gcp-private-key-id": (sa_id, '{{"type": "service_account", "private_key_id": "{}", "client_id": "1"}}'),
        "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi" + s("jwt1", 20) + "." + s("jwt2", 30), None),
        "bearer": (s("bearer", 32), "curl -H 'Authorization: Bearer {}' https://api.example.com"),
        "x-api-key": (s("xapikey", 32), "curl -H 'X-Api-Key: {}' https://api.example.com"),
        "env-password": (s("envpw", 16) + "&3!", "DB_PASSWORD={}"),
        "flag-password": (s("flagpw", 16), "pg_tool --password {} --host db"),
        "mysql-p": (s("mysqlpw", 14), "mysql -uroot -p{} shop"),
        "curl-u": (s("curlpw", 14), "curl -u admin:{} https://api.example.com"),
        "url-password": (s("urlpw", 14), "git clone https://deploy:{}@git.example.com/r.git"),
        "query-password": (s("qpw", 14), "psql 'postgresql://app@db.example.com/shop?password={}'"),
        "high-entropy": (s("entropy", 40), 'signing_salt = "{}"'),
        "base64": (b64(f"ANTHROPIC_API_KEY={inner}"), "echo {} | base64 -d"),
    }
    out = {kind: (form.format(secret) if form else secret, [secret]) for kind, (secret, form) in table.items()}
    out["base64"][1].append(inner)
    out.update(issue_23_kinds(s))
    out["private-key"] = (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(key_lines) + "\n-----END RSA PRIVATE KEY-----",
        key_lines,
    )
    return out


def _wrap(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


def issue_23_kinds(s: Callable[..., str]) -> dict[str, tuple[str, list[str]]]:
    """The kinds issue 23's sweep found leaking: vendor tokens, command-line and file forms, wrapped
    and split secrets. Kind -> (the text planted, the pieces that must not appear)."""
    out: dict[str, tuple[str, list[str]]] = {}

    def bare(kind: str, token: str, form: str = "{}") -> None:
        out[kind] = (form.format(token), [token])

    bare("gitlab-token", "glpat-" + s("gitlab", 20, ALNUM + "-_"))
    bare("pypi-token", "pypi-AgEIcHlwaS5vcmc" + s("pypi", 70, ALNUM + "-_"), "twine upload -u __token__ {} dist/*")
    bare("google-oauth-secret", "GOCSPX-" + s("gocspx", 28, ALNUM + "-_"))
    bare("huggingface-token", "hf_" + s("hf", 34, ALNUM[:52]))
    bare("sendgrid-key", "SG." + s("sg1", 22, ALNUM + "-_") + "." + s("sg2", 43, ALNUM + "-_"))
    bare("discord-bot-token", "MT" + s("dc1", 22) + "." + s("dc2", 6) + "." + s("dc3", 38, ALNUM + "-_"),
         "the bot runs as {} now")
    bare("vault-token", "hvs." + s("vault", 90, ALNUM + "-_"), "VAULT_ADDR=https://vault:8200 vault login {}")
    bare("digitalocean-token", "dop_v1_" + s("do", 64, HEXDIGITS), "doctl auth init -t {}")
    bare("telegram-bot-token", s("tgid", 10, "123456789") + ":AA" + s("tg", 33, ALNUM + "-_"),
         "curl https://api.telegram.org/bot{}/getMe")
    pw = {k: s(k, 18) for k in ("netrc", "docker", "redis", "openssl", "envpw", "envpp", "cont1", "cont2")}
    out["netrc"] = (f"machine api.example.com\n  login deploy\n  password {pw['netrc']}", [pw["netrc"]])
    out["docker-login"] = (f"docker login -u deploy -p {pw['docker']} registry.example.com", [pw["docker"]])
    out["redis-cli"] = (f"redis-cli -h cache.internal -a {pw['redis']} ping", [pw["redis"]])
    out["openssl-passin"] = (f"openssl rsa -in k.pem -passin pass:{pw['openssl']} -out plain.pem", [pw["openssl"]])
    words = [s(f"w{i}", 7, ALNUM[26:52]) for i in range(4)]
    out["env-password-quoted"] = (f'export SMTP_RELAY_PASSWORD="{words[0]} {words[1]}!"', words[:2])
    out["env-passphrase"] = (f"GPG_SIGNING_PASSPHRASE='{pw['envpp']} {words[2]}'", [pw["envpp"], words[2]])
    skb = s("skb", 128, HEXDIGITS)
    out["secret-key-base"] = (f"SECRET_KEY_BASE={skb}", [skb])
    hexkey = s("hexkey", 64, HEXDIGITS)
    out["hex-key"] = (f"ENCRYPTION_KEY={hexkey}", [hexkey])
    phrase = [s(f"qp{i}", 8, ALNUM[26:52]) for i in range(3)]
    out["quoted-passphrase"] = (f'ssh-keygen -p -N "{" ".join(phrase)}" -f id_ed25519', phrase)
    jep = [s("jep1", 10), s("jep2", 10)]
    out["json-escaped-password"] = ('{"db": {"password": "' + jep[0] + '\\"' + jep[1] + '"}}', jep)
    cookie = s("cookie", 40)
    out["session-cookie"] = (f"curl -H 'Cookie: theme=dark; sessionid={cookie}' https://app.example.com", [cookie])
    hex_text = f"aws_secret_access_key = {s('hexw', 40, ALNUM + '+/')}\n".encode().hex()
    hex_lines = _wrap(hex_text, 60)
    out["hex-wrapped"] = ("\n".join(hex_lines), [s("hexw", 40, ALNUM + "+/"), *hex_lines])
    b64_secret = s("b64w", 40)
    b64_lines = _wrap(b64(f"STRIPE_SECRET_TOKEN={b64_secret}\n# settings\nDATABASE_URL=postgres://db/app\n"), 76)
    out["b64-wrapped"] = ("\n".join(b64_lines), [b64_secret, *b64_lines])
    pem = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + s("pem0", 14, ALNUM + "+/")]
    pem += [s(f"pem{i}", 64, ALNUM + "+/") for i in range(1, 6)] + [s("pemlast", 24, ALNUM + "+/") + "=="]
    out["pem-body"] = ("\n".join(pem), pem)
    ypp = [s(f"ypp{i}", 9, ALNUM[26:52]) for i in range(3)]
    out["yaml-passphrase"] = ("signing:\n  key_passphrase: |\n    " + " ".join(ypp) + "\n  key_file: k.asc", ypp)
    out["line-continuation"] = (f"pg_tool --host db --password {pw['cont1']}\\\n{pw['cont2']} --verbose",
                                [pw["cont1"], pw["cont2"]])
    putty = [s(f"putty{i}", 64, ALNUM + "+/") for i in range(3)]
    out["putty-key"] = (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
        + "AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + "\nPrivate-Lines: 3\n" + "\n".join(putty)
        + "\nPrivate-MAC: " + s("mac", 64, HEXDIGITS),
        putty,
    )
    return out


def text_for(path: str) -> str:
    return "\n".join(plant for plant, _ in kinds(path).values()) + "\n"


class Sweep:
    def __init__(self, tmp: Path, ledger_url: str | None = None) -> None:
        self.home, self.data, self.work, self.out = tmp / "home", tmp / "data", tmp / "work", tmp / "exports"
        for folder in (self.home, self.data, self.work, self.out):
            folder.mkdir()
        self.db = str(self.data / "ledger.db")
        self.url = ledger_url
        """The PostgreSQL ledger's URL (None: SQLite, at ``db``)."""
        self.env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL")}
        self.env.update(TRAIL_HOME=str(self.home), PYTHONPATH=str(REPO))
        self.env.update({"TRAIL_DATABASE_URL": ledger_url} if ledger_url else {"TRAIL_DB": self.db})
        self.paths: list[str] = []
        self.single: dict[str, str] = {}
        """Entry paths that plant one kind only: path -> kind."""
        self.said: list[str] = []  # what commands printed (outputs and error messages are written bytes too)

    def plant(self, path: str) -> str:
        self.paths.append(path)
        return text_for(path)

    def plant_one(self, path: str, kind: str) -> str:
        """The secret of one kind for an entry path that takes a single token (a file name, a client name)."""
        self.single[path] = kind
        return kinds(path)[kind][1][0]

    def trail(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
              unset: tuple[str, ...] = (), fresh: bool = False) -> str:
        """A command on the sweep's ledger: in this process (``run_here``: the console script's own entry, each
        command opening the ledger afresh), or with ``fresh`` in a process of its own, as the hooks an agent starts,
        `trail ran` (whose command writes to the process's own streams) and the error naming the URL run."""
        if fresh:
            run_env = {k: v for k, v in {**self.env, **(env or {})}.items() if k not in unset}
            done = subprocess.run(
                [sys.executable, "-c", "from cli.main import main; main()", *args],
                input=stdin, cwd=self.work, env=run_env, capture_output=True, text=True, timeout=120,
            )
        else:
            assert env is None and not unset, "settings of a command's own go to a fresh process"
            ledger: dict[str, str | None] = (
                {"TRAIL_DATABASE_URL": self.url} if self.url else {"TRAIL_DB": self.db, "TRAIL_DATABASE_URL": None})
            done = run_here(*args, home=self.home, cwd=self.work, stdin=stdin, env=ledger)
        if args[0] != "ran":  # trail ran passes its command's own output through, as the terminal shows it
            self.said += [done.stdout, done.stderr]
        assert done.returncode == 0 or args[0] == "--db", (args[:2], done.stderr[-2000:])
        return done.stdout

    def hook(self, payload: dict[str, object] | str, env: dict[str, str] | None = None,
             unset: tuple[str, ...] = ()) -> None:
        raw = payload if isinstance(payload, str) else json.dumps(payload)
        self.trail("hook", "claude-code", stdin=raw, env=env, unset=unset, fresh=True)

    def mcp(self, client: str, body: Callable[[Any], Awaitable[None]]) -> None:
        """A session with the MCP server as a client named ``client``; every answer is kept in ``said``."""
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.types import Implementation

        server = StdioServerParameters(command=sys.executable, args=["-c", "from cli.main import main; main()", "mcp"],
                                       env=self.env, cwd=self.work)

        async def main() -> None:
            with open(self.data / "mcp.log", "w") as log:  # the server's log lines: scanned as a file
                async with stdio_client(server, errlog=log) as (read, write), ClientSession(
                    read, write, client_info=Implementation(name=client, version="1.0")
                ) as session:
                    await session.initialize()
                    with anyio.fail_after(120):
                        await body(session)

        anyio.run(main)

    async def call(self, session: Any, tool: str, **arguments: Any) -> None:
        result = await session.call_tool(tool, arguments)
        self.said.append(result.model_dump_json())
        assert not result.is_error, (tool, result)


SESSION = "55555555-eeee-4fff-8aaa-000000000005"


def _transcript(sweep: Sweep, text: str) -> Path:
    base = {"sessionId": "66666666-ffff-4aaa-8bbb-000000000006", "cwd": str(sweep.work), "version": "2.0.0",
            "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "p1", "parentUuid": None, "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "user", "content": f"Use these:\n{text}"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "p1", "timestamp": "2026-01-01T00:00:02Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_I1", "name": "Bash", "input": {"command": text}},
             {"type": "tool_use", "id": "toolu_I2", "name": "Write",
              "input": {"file_path": f"{sweep.work}/.env", "content": text}},
         ]}},
        {**base, "type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "2026-01-01T00:00:03Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_I1", "content": text}]},
         "toolUseResult": {"stdout": text, "stderr": ""}},
        {**base, "type": "user", "uuid": "r2", "parentUuid": "r1", "timestamp": "2026-01-01T00:00:04Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_I2", "content": "ok"}]},
         "toolUseResult": {"type": "create", "filePath": f"{sweep.work}/.env", "content": text,
                           "structuredPatch": []}},
    ]
    path = sweep.work / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _record_everything(sweep: Sweep) -> None:
    t = sweep.trail
    # CLI arguments.
    t("start", "Sweep " + sweep.plant("start-title"))
    t("require", sweep.plant("require"))
    t("decide", sweep.plant("decide"), "--because", sweep.plant("decide-because"))
    t("note", sweep.plant("note"))
    t("attempt", sweep.plant("attempt"))
    t("branch", "1", sweep.plant("branch-title"), "--at", "2", "--no-switch")
    # A command: its argv (each line a word, so secrets are split across argv) and its output.
    t("ran", "--", "echo", *sweep.plant("ran-argv").split(), fresh=True)
    out = sweep.work / "out.txt"
    out.write_text(sweep.plant("ran-output"))
    t("ran", "--", "cat", str(out), fresh=True)
    # A key body whose BEGIN line falls outside the 4 KiB output tail.
    long_key = kinds("ran-cut-key")["private-key"][0].replace(
        "\n-----END", "\n" + "\n".join(rnd(f"cutkey{i}", 64, ALNUM + "+/") for i in range(80)) + "\n-----END"
    )
    sweep.single["ran-cut-key"] = "private-key"
    (sweep.work / "key.txt").write_text(long_key)
    t("ran", "--", "cat", str(sweep.work / "key.txt"), fresh=True)
    # A changed file, twice (the second diff is against the kept blob).
    env_file = sweep.work / ".env"
    env_file.write_text(sweep.plant("changed-file"))
    t("changed", ".env")
    env_file.write_text(env_file.read_text() + "EXTRA=1\n" + sweep.plant("changed-again"))
    t("changed", ".env")
    # Hooks: a prompt, a command with its output, an Edit whose patch lines carry a key line by line.
    cwd = str(sweep.work)
    sweep.hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "cwd": cwd,
                "prompt": sweep.plant("hook-prompt")})
    sweep.hook({"session_id": SESSION, "hook_event_name": "PostToolUse", "cwd": cwd, "tool_name": "Bash",
                "tool_use_id": "toolu_H1", "tool_input": {"command": sweep.plant("hook-command")},
                "tool_response": {"stdout": sweep.plant("hook-stdout"), "stderr": ""}})
    patch_text = sweep.plant("hook-edit-patch")
    sweep.hook({"session_id": SESSION, "hook_event_name": "PostToolUse", "cwd": cwd, "tool_name": "Edit",
                "tool_use_id": "toolu_H2",
                "tool_input": {"file_path": f"{cwd}/k.pem", "old_string": "x", "new_string": "y"},
                "tool_response": {"filePath": f"{cwd}/k.pem", "oldString": "x", "newString": "y",
                                  "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                                       "newLines": 1, "lines": ["-x"] + [
                                                           "+" + line for line in patch_text.splitlines()]}]}})
    # Dead letters: torn JSON, JSON nested too deep to parse, a ledger that cannot be opened.
    sweep.hook('{"session_id": "x", "prompt": ' + json.dumps(sweep.plant("deadletter-torn")))
    deep = json.dumps(sweep.plant("deadletter-deep"))
    sweep.hook('{"a": ' + "[" * 100_000 + deep + "]" * 100_000 + "}")
    (sweep.data / "dir.db").mkdir()
    sweep.hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "cwd": cwd,
                "prompt": sweep.plant("deadletter-unopenable")}, env={"TRAIL_DB": str(sweep.data / "dir.db")},
               unset=("TRAIL_DATABASE_URL",))
    # A transcript imported after the fact.
    t("import", "claude-code", str(_transcript(sweep, sweep.plant("import"))))
    # A file whose name holds a token: the path is in the event, the diff's header and the command's answer.
    named = sweep.work / f"notes-{sweep.plant_one('changed-path', 'github-token')}.txt"
    named.write_text("first\n")
    t("changed", named.name)
    named.write_text("second\n")
    t("changed", named.name, "--json")
    # The MCP server: a client whose name holds a token (it becomes the actor), and tool arguments.
    client = "Client-" + sweep.plant_one("mcp-client", "github-token")

    async def tools(session: Any) -> None:
        await sweep.call(session, "record", kind="note", text=sweep.plant("mcp-note"))
        await sweep.call(session, "record", kind="decision", text=sweep.plant("mcp-decision"),
                         reason=sweep.plant("mcp-reason"), rejected=sweep.plant("mcp-rejected").splitlines())
        await sweep.call(session, "resume_task")
        await sweep.call(session, "log", limit=50)
        await sweep.call(session, "query", sql="SELECT type, actor, payload FROM events", limit=500)

    sweep.mcp(client, tools)
    # Reads that fold the inbox, build the read model, export.
    t("list")
    t("doctor")
    t("stats")
    t("query", "SELECT * FROM events")
    t("resume")
    for task in json.loads(t("list", "--json")):
        number = str(task["number"])
        t("export", number, "--parquet", str(sweep.out))
        t("export", number, "--agent-trace", str(sweep.out / f"trace-{number}.jsonl"))
        t("show", number, "--html", str(sweep.out / f"task-{number}.html"))
        t("log", number, "--json")
    # An error that names the ledger URL.
    sweep.single["db-url-error"] = "query-password"
    password = kinds("db-url-error")["query-password"][1][0]
    t("--db", f"postgresql://app@127.0.0.1:1/shop?password={password}", "list", fresh=True)


def _files(sweep: Sweep) -> list[Path]:
    return [p for root in (sweep.home, sweep.data, sweep.out) for p in sorted(root.rglob("*")) if p.is_file()]


def _postgres_rows(url: str) -> bytes:
    """Every row of every table of the ledger's schema, as text: the PostgreSQL side of "every byte"."""
    from psycopg import sql

    from ledger.base.location import resolve
    from ledger.stores import postgres

    location = resolve(url)
    schema = parse_qs(urlsplit(url).query)["schema"][0]
    out = []
    with postgres.connect(location.postgres(), location.display) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
        assert tables, schema
        for table in tables:
            query = sql.SQL("SELECT row_to_json(t)::text FROM {}.{} t").format(
                sql.Identifier(schema), sql.Identifier(table))
            out += [row[0] for row in conn.execute(query)]
            # bytea columns show as hex in JSON: their bytes, decoded, too.
            for (column,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "AND data_type = 'bytea'", (schema, table)):
                q = sql.SQL("SELECT {} FROM {}.{}").format(
                    sql.Identifier(column), sql.Identifier(schema), sql.Identifier(table))
                out += [bytes(row[0]).decode("utf-8", "replace") for row in conn.execute(q) if row[0] is not None]
    return "\n".join(out).encode()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # PostgreSQL: test_secrets_everywhere_postgres.py
def test_no_planted_secret_in_any_byte(
    tmp_path: Path, backend: str, new_store: Callable[[], str], capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_every_byte(tmp_path, backend, new_store, capsys)


def sweep_every_byte(
    tmp_path: Path, backend: str, new_store: Callable[[], str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Plant every kind through every entry path on ``backend``, then look for each in every byte."""
    sweep = Sweep(tmp_path, new_store() if backend == "postgres" else None)
    _record_everything(sweep)
    files = _files(sweep)
    names = {p.name for p in files}
    assert any(n.endswith(".parquet") for n in names) and any(n.endswith(".html") for n in names), names
    assert any(n.endswith(".duckdb") for n in names) and (sweep.home / "deadletter").is_dir(), names
    assert len(list((sweep.home / "deadletter").glob("*.json"))) == 3
    assert list((sweep.home / "blobs").rglob("*")), "trail changed kept a baseline"
    blob = b"".join(p.read_bytes() for p in files) + "\n".join(map(str, files)).encode()
    blob += "".join(sweep.said).encode()
    if sweep.url:
        blob += _postgres_rows(sweep.url)
    else:
        assert "ledger.db" in names
    assert b"[REDACTED:" in blob
    assert b"agent:Client-[REDACTED:github-token:" in blob  # the MCP client's actor, recorded and redacted

    planted = held = 0
    leaks = []
    for path in [*sweep.paths, *sweep.single]:
        for kind, (_, secrets) in kinds(path).items():
            if path in sweep.single and kind != sweep.single[path]:
                continue  # that path plants one kind only
            planted += 1
            needles = [*secrets, *(b64(x) for x in secrets)]
            if path == "ran-cut-key":
                needles += [rnd(f"cutkey{i}", 64, ALNUM + "+/") for i in range(80)]
            found = [x for x in needles if x.encode() in blob]
            if found:
                leaks.append(f"{path}/{kind}: {found[0][:24]}…")
            else:
                held += 1
    with capsys.disabled():
        print(f"\nsecrets planted: {planted}, held: {held} ({len(sweep.paths) + len(sweep.single)} entry paths, "
              f"{len(kinds('x'))} kinds, {backend})")
    assert leaks == [], "\n".join(leaks)
