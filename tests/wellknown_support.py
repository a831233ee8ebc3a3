"""A real HTTP server (http.server in a thread) publishing a well-known skills index, and
builders for the artifacts it serves (no tests in here)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"


class Site:
    """Paths -> bytes served at http://127.0.0.1:PORT; ``hits`` counts requests per path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.redirects: dict[str, str] = {}  # path -> Location
        self.hits: dict[str, int] = {}
        self.base = ""

    def publish(self, path: str, data: bytes) -> str:
        self.files[path] = data
        return self.base + path

    def index(self, skills: list[dict], path: str = "/.well-known/agent-skills/index.json") -> None:
        self.publish(path, json.dumps({"$schema": SCHEMA, "skills": skills}).encode())


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry(name: str, kind: str, url: str, data: bytes, *, wrong: bool = False) -> dict:
    d = digest(data if not wrong else data + b"tampered")
    return {"name": name, "type": kind, "description": f"The {name} skill", "url": url, "digest": d}


def tar_gz(
    files: dict[str, bytes | tuple[str, str]], *, modes: dict[str, int] | None = None
) -> bytes:
    """A tar.gz of ``files``: bytes are files; ("symlink", target) / ("hardlink", target)
    are links, ("device", "") a character device."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                kinds = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE}
                info.type = kinds.get(data[0], tarfile.CHRTYPE)  # "device": a character device
                info.linkname = data[1]
                tar.addfile(info)
                continue
            info.size = len(data)
            info.mode = (modes or {}).get(name, 0o644)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


@contextmanager
def serve(site: Site) -> Iterator[Site]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            site.hits[path] = site.hits.get(path, 0) + 1
            if path in site.redirects:
                self.send_response(302)
                self.send_header("Location", site.redirects[path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = site.files.get(path)
            if data is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
