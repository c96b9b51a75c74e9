"""`replay-tui serve JOURNAL [--port N] [--host H]`: the same app in a browser, through textual-serve.

Each browser tab gets its own app process (``replay-tui JOURNAL`` under Textual's web driver). It
listens on loopback unless told otherwise, and every URL sits under a random token
(``http://127.0.0.1:PORT/TOKEN/``), so another user of the machine, or a page in the browser that
guesses the port, cannot open the journal. The page is textual-serve's own, minus its web-font link:
nothing is fetched from outside the server.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import EXIT_OK, EXIT_USAGE, print_text

LOOPBACK = "127.0.0.1"
REMOTE_FONTS = (
    '<link\n      rel="stylesheet"\n      href="https://fonts.googleapis.com/css?family=Roboto%20Mono"\n    />'
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal", help="journal file or shard directory")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--host", default=LOOPBACK, help="address to listen on (default: loopback only)")
    parser.add_argument("--theme", help="theme name for the app")
    parser.add_argument("--seq", type=int, help="select this seq when the app opens")


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def app_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs for each browser tab."""
    argv = [sys.executable, "-m", "replay_tui", str(Path(args.journal).resolve())]
    if args.theme:
        argv += ["--theme", args.theme]
    if args.seq is not None:
        argv += ["--seq", str(args.seq)]
    return shlex.join(argv)


def local_templates(original: Path, directory: Path) -> Path:
    """textual-serve's page template without the link to Google's web fonts."""
    text = (original / "app_index.html").read_text(encoding="utf-8")
    (directory / "app_index.html").write_text(text.replace(REMOTE_FONTS, ""), encoding="utf-8")
    return directory


def make_server(command: str, host: str, port: int, token: str, templates: Path) -> Any:
    """A textual-serve Server whose every route is under ``/TOKEN/``."""
    import textual_serve
    from aiohttp import web
    from textual_serve.server import Server

    class TokenServer(Server):
        async def _make_app(self) -> web.Application:
            import aiohttp_jinja2
            import jinja2

            app = web.Application()
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get(f"/{token}/", self.handle_index, name="index"),
                    web.get(f"/{token}/ws", self.handle_websocket, name="websocket"),
                    web.get(f"/{token}/download/{{key}}", self.handle_download, name="download"),
                    web.static(f"/{token}/static", self.statics_path, name="static"),
                ]
            )
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

    server = TokenServer(command, host=host, port=port, title="replay-tui")
    server.statics_path = Path(textual_serve.__file__).parent / "static"
    server.templates_path = templates
    return server


def run(args: argparse.Namespace) -> int:
    journal = Path(args.journal).expanduser()
    if not journal.exists():
        print_text(f"replay-tui serve: {args.journal}: no such file or directory", error=True)
        return EXIT_USAGE
    try:
        import textual_serve
    except ImportError:
        print_text("replay-tui serve: needs textual-serve (pip install 'replay-tui[serve]')", error=True)
        return EXIT_USAGE
    port = args.port or free_port(args.host)
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="replay-tui-serve-") as directory:
        templates = local_templates(Path(textual_serve.__file__).parent / "templates", Path(directory))
        server = make_server(app_command(args), args.host, port, token, templates)
        url = f"http://{args.host}:{port}/{token}/"
        print(f"serving {journal.name} at {url}", flush=True)
        print("anyone with this URL can open the journal; ctrl+c stops", file=sys.stderr, flush=True)
        server.serve()
    return EXIT_OK
