"""The secret shapes redaction and scan used to miss (scan then said clean), and their neighbours: each is
planted in a recorded run (a model answer, a tool's arguments and its result, the run's output) and the
journal's bytes are read; the same text written unredacted is what ``replay-tui scan`` must find."""

from __future__ import annotations

import secrets
import string
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from replay_tui.analysis.secrets import scan_string
from replay_tui.harness import Harness, JsonlSink, ToolSpec
from replay_tui.journal import JournalWriter, call_key_of
from tests.journal_factory import run_started

REPO = Path(__file__).resolve().parents[2]
_ALNUM = string.ascii_letters + string.digits


def _password() -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(12)) + "7a"


def _hex(count: int) -> str:
    return "".join(secrets.choice("0123456789abcdef") for _ in range(count))


def _urlsafe(count: int) -> str:
    return "".join(secrets.choice(_ALNUM + "-_") for _ in range(count))


def _b64(count: int) -> str:
    return "".join(secrets.choice(_ALNUM + "+/") for _ in range(count))


def shapes() -> list[tuple[str, str, str]]:
    """(what, the text it sits in, the secret), fresh each call."""
    found = []

    def plant(what: str, text: str, secret: str | None = None) -> None:
        secret = secret or _password()
        found.append((what, text.replace("{}", secret), secret))

    # URL passwords: no user name, an '@' inside
    plant("redis URL without a user", "cache at redis://:{}@cache.internal:6379/0")
    plant("rediss URL without a user", "REDIS_URL=rediss://:{}@cache.internal:6380")
    at_password = f"{_password()}@{_password()}"
    plant("a database URL whose password holds '@'", "postgres://app:{}@db.internal:5432/crm", at_password)
    plant("amqp URL whose password holds '@' twice", "amqp://svc:{}@mq:5672/", f"a@{_password()}@b")
    # assignments to names ending in PASS, PW, CREDS
    plant("DB_PASS=", "export DB_PASS={}")
    plant("SMTP_PASS=", "SMTP_PASS={} python send.py")
    plant("REDIS_PW=", "REDIS_PW={}")
    plant("API_CREDS:", "API_CREDS: {}")
    # passwords on command lines
    plant("curl -u", "curl -u deploy:{} https://api.internal/v1/deploy")
    plant("curl --user=", "curl --user=deploy:{} -X POST https://api.internal")
    plant("curl -U (proxy)", "curl -U proxyuser:{} https://example.com")
    plant("httpie -a", "http -a bob:{} GET https://api.internal/me")
    plant("mysql -p", "mysql -h db -u root -p{} crm < dump.sql")
    plant("mysqldump -p'...'", "mysqldump -u root -p'{}' crm > crm.sql")
    plant("mariadb --password=", "mariadb --password={} -e 'select 1'")
    plant("sshpass -p", "sshpass -p {} ssh deploy@10.0.0.5 uptime")
    plant("sshpass -p glued", "sshpass -p{} scp f deploy@host:")
    plant("redis-cli -a", "redis-cli -h cache -a {} INFO")
    plant("mongosh -p", "mongosh --host db -u admin -p {} --authenticationDatabase admin")
    plant("sqlcmd -P", "sqlcmd -S db -U sa -P {} -Q 'select 1'")
    plant("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=corp -w {} -b dc=corp")
    plant("smbclient -U user%", "smbclient //fs/share -U alice%{}")
    plant("docker login -p", "docker login -u ci -p {} registry.internal")
    plant("helm registry login --password", "helm registry login reg.internal --username ci --password {}")
    plant("openssl -passin pass:", "openssl rsa -in key.pem -passin pass:{} -out plain.pem")
    plant("htpasswd -b", "htpasswd -bc /etc/nginx/.htpasswd admin {}")
    plant("keytool -storepass", "keytool -importcert -file ca.pem -keystore t.jks -storepass {}")
    plant("zip -P", "zip -P {} secrets.zip notes.txt")
    plant("7z -p", "7z a -p{} backup.7z data/")
    plant("sqlplus user/password@", "sqlplus scott/{}@orcl @report.sql")
    plant("lftp -u user,password", "lftp -u bob,{} ftp.internal")
    plant("--api-key VALUE", "deploy-tool --api-key {} --region eu")
    plant("--client-secret VALUE", "az login --service-principal -u app --client-secret {} --tenant t")
    # vendor tokens with hex bodies, and their neighbours
    for prefix in ("dop_v1_", "doo_v1_", "dor_v1_"):
        plant(f"DigitalOcean {prefix}", "token {} in use", prefix + _hex(64))
    for prefix in ("dapi", "dose"):
        plant(f"Databricks {prefix}", "databricks auth {}", prefix + _hex(32))
    for prefix in ("shpat_", "shpca_", "shppa_", "shpss_"):
        plant(f"Shopify {prefix}", "X-Shopify-Access-Token {}", prefix + _hex(32))
    plant("Sentry user token", "sentry-cli --log-level info using {}", "sntryu_" + _hex(64))
    plant("Sentry org token", "SENTRY token {}", "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9_" + _b64(43))
    plant("Mailchimp key", "mailchimp key {}", _hex(32) + "-us21")
    plant("Pulumi token", "pulumi login with {}", "pul-" + _hex(40))
    plant("RubyGems key", "gem push with {}", "rubygems_" + _hex(48))
    plant("Postman key", "postman {}", f"PMAK-{_hex(24)}-{_hex(34)}")
    # tokens longer than the entropy rule's 512 characters
    plant("STS session token (origin)", "session {} end", "IQoJb3JpZ2luX2VjE" + _b64(800) + "==")
    plant("STS session token (er/aws)", "session {} end", "FwoGZXIvYXdzE" + _b64(600))
    plant("Google OAuth access token", "Authorization header for gcs: {} ok", "ya29.a0" + _urlsafe(700))
    return found


SHAPES = shapes()


@pytest.mark.parametrize(("what", "text", "secret"), SHAPES, ids=[s[0] for s in SHAPES])
def test_scan_finds_each_shape(what: str, text: str, secret: str) -> None:
    found = scan_string(text, "note")
    assert found is not None, (what, text)


def test_each_shape_planted_in_a_recorded_run_stays_out_of_the_file(tmp_path: Path) -> None:
    planted = shapes()
    journal = tmp_path / "planted.jsonl"

    class Model:
        def complete(self, request: dict) -> dict:
            return {"content": "\n".join(text for _, text, _ in planted), "finish_reason": "stop"}

    def shell(command: str) -> str:
        return f"ran: {command}"

    tools = {"shell": ToolSpec("shell", shell)}
    harness = Harness(sink=JsonlSink(journal, run_id="planted"), run_id="planted", model=Model(), tools=tools)
    harness.start_run(agent="tests:planted")
    harness.model({"model": "m", "messages": [{"role": "user", "content": "deploy"}]})
    for _, text, _ in planted:
        harness.tool("shell", {"command": text})
    harness.end_run("ok", {"summary": [text for _, text, _ in planted]})
    raw = journal.read_bytes()
    survivors = [what for what, _, secret in planted if secret.encode() in raw]
    for what, _, secret in planted:  # no piece of a password with '@' in it is left either
        for piece in secret.split("@"):
            if len(piece) >= 6 and piece.encode() in raw and what not in survivors:
                survivors.append(f"{what} (the part {piece[:4]}…)")
    assert not survivors, survivors
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "scan", str(journal)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:]  # what redaction wrote, scan calls clean


def test_scan_finds_each_shape_in_an_unredacted_journal(tmp_path: Path) -> None:
    """The journal written without redaction (an importer's, an old recorder's): scan exits 1 and lists each."""
    planted = shapes()
    journal = tmp_path / "raw.jsonl"
    with JournalWriter(journal, run_id="raw", fsync="never") as writer:
        writer.append("run.started", run_started())
        for index, (_, text, _) in enumerate(planted):
            arguments = {"command": text}
            writer.append(
                "tool.call",
                {
                    "call_id": f"c{index}",
                    "call_key": call_key_of("shell", arguments),
                    "tool": "shell",
                    "arguments": arguments,
                },
                step_id=f"s{index}",
            )
        writer.append("run.ended", {"status": "ok", "output": None})
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "scan", "--json", str(journal)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stdout[-3000:]
    report = orjson.loads(done.stdout)
    flagged = {finding["seq"] for finding in report["findings"]}
    missed = [what for index, (what, _, _) in enumerate(planted) if index + 2 not in flagged]
    assert not missed, missed
