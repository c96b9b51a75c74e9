"""Passwords on a command line, for the ``command-line`` detector of ``journal.detectors``.

* a long flag with a sensitive name and its value: ``--password PW``, ``--api-key=K``, ``-storepass PW``
  (keytool), ``--client-secret S`` (not ``--password-file PATH`` or ``--password-stdin``);
* the short flags and positionals of the commands that take a password that way: ``curl -u user:PW``,
  ``http -a user:PW``, ``mysql -pPW`` (attached: ``-p PW`` names a database), ``sshpass -p PW``,
  ``redis-cli -a PW``, ``mongosh -p PW``, ``sqlcmd -P PW``, ``ldapsearch -w PW``, ``smbclient -U user%PW``,
  ``docker login -p PW`` (and podman, helm, az ...: ``-p`` only after ``login``), ``zip -P PW``, ``7z -pPW``,
  ``openssl ... -passin pass:PW``, ``htpasswd -b FILE USER PW``, ``sqlplus user/PW@db``, ``lftp -u user,PW``.

Linear in the text: each segment of a command (up to a newline, ';', '|' or '&') is read once, by one regex,
whatever it holds; its flags by one more. A value that is a variable, a substitution or a redirection
(``$PW``, ``$(cat f)``, ``<file``) is no secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property

from .lazy_patterns import compile_every

#: What every text a rule here can fire on holds: a flag (a dash after no word character, then a letter: not
#: a negative number; the dash first, so the engine skips to dashes at C speed), or an Oracle client's name.
FLAG_GATE = r"-(?<![\w-]-)-?[A-Za-z]"
#: The same over serialized JSON, where a newline before the dash is the two bytes \n.
FLAG_GATE_BYTES = rb"-(?<![\w-]-)-?[A-Za-z]|\\[nrt]--?[A-Za-z]"
ORACLE = ("sqlplus", "rman", "expdp", "impdp")

Span = tuple[int, int]


class _Patterns:
    """Each pattern compiled on first use: they run only on text that ``FLAG_GATE`` (or an Oracle client's
    name) lets through, which the viewer's first frame has none of, and compiling them at import was about
    12 M instructions of it."""

    # A command segment: the command (its name as a word of its own) and its arguments up to the segment's end.
    @cached_property
    def command(self) -> re.Pattern[str]:
        return re.compile(
            r"(?<![\w./-])(?P<command>curl|wget|https?|xhs?|mysql(?:dump|admin|import|show|check|sh|slap|binlog|pump)?|"
            r"mariadb(?:-dump|-admin|-import|-show|-check)?|sshpass|redis-cli|mongo(?:sh|dump|restore|export|import|stat|top|"
            r"files)?|sqlcmd|bcp|osql|ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn|exop)|smbclient|rpcclient|"
            r"smbget|smbcacls|docker|podman|nerdctl|buildah|oras|helm|az|htpasswd|zip|unzip|7z[ar]?|rar|unrar|openssl|"
            r"sqlplus|rman|expdp|impdp|lftp)(?![\w.-])(?P<args>[^\n;|&]*)"
        )

    # A flag of a segment (with what is glued to it: ``-pPW``, ``-p'PW'``) and the token after it, unless that is a flag.
    @cached_property
    def flag(self) -> re.Pattern[str]:
        return re.compile(
            r"(?<!\S)(?P<flag>-{1,2}[A-Za-z][^\s\"'=]*(?:\"[^\"\n]*\"|'[^'\n]*')?)"
            r"(?:(?P<sep>=|[ \t]+)(?P<value>\"[^\"\n]{1,300}\"|'[^'\n]{1,300}'|(?!-)[^\s\"'`]+))?"
        )

    # A long flag anywhere in text, with its value (the name is judged by ``is_secret_key``).
    @cached_property
    def long_flag(self) -> re.Pattern[str]:
        return re.compile(
            r"-(?<![\w-]-)-?(?P<name>[A-Za-z][A-Za-z0-9_-]{2,60})(?:=|[ \t]+)(?P<value>\"[^\"\n]{1,300}\"|'[^'\n]{1,300}'|"
            r"(?![-$<`])[^\s\"'`;|&<>()]+)"
        )

    # Names of flags that take no secret though they name one: a file, a prompt, a way to read it.
    @cached_property
    def not_a_secret_flag(self) -> re.Pattern[str]:
        return re.compile(r"(file|path|stdin|env|fd|prompt|command|cmd|helper|dir|policy|length|type)$")

    @cached_property
    def login(self) -> re.Pattern[str]:
        return re.compile(r"(?<!\S)login(?!\S)")

    @cached_property
    def oracle_logon(self) -> re.Pattern[str]:
        return re.compile(r"\s+[A-Za-z0-9_$#.]+/(?P<secret>[^\s@/\"']+)")

    @cached_property
    def positional(self) -> re.Pattern[str]:
        return re.compile(r"(?<!\S)(?!-)(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)")

    # A long flag at the end of a text whose value may still be arriving: the flag, a separator, a value not ended.
    @cached_property
    def open_long_flag(self) -> re.Pattern[str]:
        return re.compile(r"-(?<![\w-]-)-?(?P<name>[A-Za-z][A-Za-z0-9_-]{2,60})(?:(?:=|[ \t]+)[^\s\"'`;|&<>()]*)?\Z")

    # Where a command segment ends (what ``command`` reads to).
    @cached_property
    def segment_end(self) -> re.Pattern[str]:
        return re.compile(r"[\n;|&]")


_patterns = _Patterns()


def compile_all() -> None:
    """Every pattern compiled now (see ``lazy_patterns``)."""
    compile_every(_patterns)


def open_command_start(text: str, is_secret_key: Callable[[str], bool]) -> int | None:
    """Where a command line at the end of ``text`` starts whose password may still be arriving: a segment of a
    command that takes one (``sshpass -p``, ``curl -u user:``, ``htpasswd -b FILE USER``) that has not ended, or
    a sensitive long flag whose value has not (``--password``, ``--api-key=ab``); None when there is none. A
    text handed over piece by piece (a stream) holds back from there, so the detector sees the whole line."""
    ends = list(_patterns.segment_end.finditer(text))
    line_start = ends[-1].end() if ends else 0
    segment = _patterns.command.search(text, line_start)
    if segment is not None:
        return segment.start()
    flag = _patterns.open_long_flag.search(text, line_start)
    if flag is not None and is_secret_key(flag.group("name")):
        return flag.start()
    return None


def command_line_spans(text: str, is_secret_key: Callable[[str], bool]) -> Iterator[tuple[int, int, str]]:
    """(start, end, what) of every password found on a command line in ``text``."""
    for match in _patterns.long_flag.finditer(text):
        name = match.group("name")
        if is_secret_key(name) and not _patterns.not_a_secret_flag.search(
            name.lower().replace("-", "").replace("_", "")
        ):
            start, end = _unquoted(text, match.span("value"))
            if end > start:
                yield start, end, f"--{name}"
    for segment in _patterns.command.finditer(text):
        for start, end, what in _segment_spans(segment.group("command"), segment.group("args")):
            yield segment.start("args") + start, segment.start("args") + end, what


def _unquoted(text: str, span: Span) -> Span:
    start, end = span
    if end - start >= 2 and text[start] == text[end - 1] and text[start] in "\"'":
        return start + 1, end - 1
    return start, end


def _segment_spans(command: str, args: str) -> Iterator[tuple[int, int, str]]:
    """The secrets in the arguments of one command (spans relative to ``args``)."""
    family = _FAMILY.get(command) or _family_of(command)
    if family == "oracle":
        logon = _patterns.oracle_logon.match(args)
        if logon is not None:
            yield *logon.span("secret"), f"{command} user/password"
        return
    login = _patterns.login.search(args)
    batch = False
    for flag in _patterns.flag.finditer(args):
        after_login = login is not None and login.start() < flag.start()
        span = _flag_secret(family, args, flag, after_login)
        if span is not None and span[1] > span[0] and args[span[0]] not in "$<`":
            yield *span, f"{command} {flag.group('flag')[:2]}"
        batch = batch or family == "htpasswd" and re.fullmatch(r"-[A-Za-z]*b[A-Za-z]*", flag.group("flag")) is not None
    if batch:  # htpasswd -b[c] FILE USER PASSWORD, htpasswd -nb USER PASSWORD: the last positional
        last = None
        for last in _patterns.positional.finditer(args):
            pass
        if last is not None:
            start, end = _unquoted(args, last.span())
            if end > start and args[start] not in "$<`":
                yield start, end, "htpasswd -b"


def _flag_secret(family: str, args: str, flag: re.Match[str], after_login: bool) -> Span | None:
    """Where the secret given with one flag is (relative to the arguments), or None."""
    name = flag.group("flag")
    value = _unquoted(args, flag.span("value")) if flag.group("value") is not None else None
    separator = _USER_PASSWORD_FLAGS.get(family, {}).get(name)
    if separator is not None:  # user:password, user%password, user,password: the part after the first one
        if value is None:
            return None
        cut = args.find(separator, value[0], value[1])
        return (cut + 1, value[1]) if cut >= 0 else None
    if family == "openssl" and name in ("-pass", "-passin", "-passout"):
        return (value[0] + 5, value[1]) if value is not None and args.startswith("pass:", value[0]) else None
    letter = _PASSWORD_FLAG.get(family)
    if letter is None or (family == "registry" and not after_login):
        return None
    if name == letter:
        return None if family in _GLUED_ONLY else value  # mysql -p DB: DB is the database, -p alone prompts
    glued = next((len(head) for head in _GLUED.get(family, ()) if name.startswith(head) and len(name) > len(head)), 0)
    return _unquoted(args, (flag.start("flag") + glued, flag.end("flag"))) if glued else None  # -pPW, -p'PW'


_FAMILY = {
    "curl": "curl",
    "http": "httpie",
    "https": "httpie",
    "xh": "httpie",
    "xhs": "httpie",
    "sshpass": "sshpass",
    "redis-cli": "redis",
    "sqlcmd": "sqlcmd",
    "bcp": "sqlcmd",
    "osql": "sqlcmd",
    "smbclient": "smb",
    "rpcclient": "smb",
    "smbget": "smb",
    "smbcacls": "smb",
    "htpasswd": "htpasswd",
    "zip": "zip",
    "unzip": "zip",
    "openssl": "openssl",
    "lftp": "lftp",
    "wget": "wget",
}


def _family_of(command: str) -> str:
    if command.startswith(("mysql", "mariadb")):
        return "mysql"
    if command.startswith("mongo"):
        return "mongo"
    if command.startswith("ldap"):
        return "ldap"
    if command.startswith(("7z", "rar", "unrar")):
        return "archive"
    if command in ("sqlplus", "rman", "expdp", "impdp"):
        return "oracle"
    return "registry"  # docker, podman, nerdctl, buildah, oras, helm, az: -p after "login"


#: The flag that takes a password, per family (glued on or as the next token).
_PASSWORD_FLAG = {
    "mysql": "-p",
    "sshpass": "-p",
    "redis": "-a",
    "mongo": "-p",
    "sqlcmd": "-P",
    "ldap": "-w",
    "registry": "-p",
    "zip": "-P",
    "archive": "-p",
    "openssl": "-k",
}
#: Families whose password flag takes its value glued on (a separate token is something else).
_GLUED_ONLY = frozenset({"mysql", "archive"})
#: The flags a password may be glued to, per family (``mysql -pPW``, ``rar -hpPW``).
_GLUED = {"mysql": ("-p",), "archive": ("-p", "-hp"), "sshpass": ("-p",), "sqlcmd": ("-P",)}
#: Flags whose value is a user and a password, and what separates them.
_USER_PASSWORD_FLAGS = {
    "curl": {"-u": ":", "--user": ":", "-U": ":", "--proxy-user": ":"},
    "httpie": {"-a": ":", "--auth": ":"},
    "smb": {"-U": "%", "--user": "%"},
    "lftp": {"-u": ","},
}
