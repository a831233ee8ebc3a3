"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the trace tests: it keeps every request's
raw bytes (to look for a secret in any byte) and decodes them with opentelemetry-proto."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    raw: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, decoded: name, ids (hex), parent, service, attributes."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        out = []
        with self.lock:
            bodies = list(self.raw)
        for body in bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        out.append(
                            {
                                "name": span.name,
                                "trace": span.trace_id.hex(),
                                "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "service": service,
                                "status": span.status.code,
                                "message": span.status.message,
                                "attributes": {a.key: _value(a.value) for a in span.attributes},
                            }
                        )
        return out

    def all_bytes(self) -> bytes:
        with self.lock:
            return b"".join(self.raw)


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def start_receiver() -> tuple[ThreadingHTTPServer, Received, str]:
    """(server, what it received, the traces endpoint URL); server.shutdown() ends it."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    received = Received()
    answer = ExportTraceServiceResponse().SerializeToString()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if self.path == "/v1/traces":
                with received.lock:
                    received.raw.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received, f"http://127.0.0.1:{server.server_address[1]}/v1/traces"


class BadCollector:
    """A collector that misbehaves, on a real socket of 127.0.0.1 (not an HTTP library, so
    it can misbehave at any byte): ``hang`` takes the request and never answers,
    ``trickle`` answers a header line a second forever, ``500`` and ``503`` answer so at
    once (a 503 is retried), ``huge`` answers 200 with a body of ``HUGE`` bytes (``sent``:
    how many the client took before it closed), ``down`` is a port nobody listens on.
    ``close()`` ends it all."""

    HUGE = 128 * 1024 * 1024

    def __init__(self, mode: str) -> None:
        import socket

        self.mode = mode
        self.sent = 0
        self.done = threading.Event()  # the huge answer ended (sent in full, or cut off)
        self._closed = threading.Event()
        self._sockets: list[Any] = []
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        port = self._server.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        if mode == "down":
            self._server.close()  # the port is free again: connections are refused
            return
        self._server.listen(32)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._sockets.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        try:
            conn.recv(1 << 20)  # the request (enough of it)
            if self.mode == "hang":
                self._closed.wait()
            elif self.mode == "trickle":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not self._closed.wait(1.0):
                    conn.sendall(b"X-Slow: yes\r\n")
            elif self.mode in ("500", "503"):  # 503: retried, with backoff, until its deadline
                conn.sendall(f"HTTP/1.1 {self.mode} Oops\r\nContent-Length: 0\r\n\r\n".encode())
            elif self.mode == "huge":
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {self.HUGE}\r\n\r\n"
                conn.sendall(head.encode())
                chunk = b"x" * 65536
                while self.sent < self.HUGE and not self._closed.is_set():
                    conn.sendall(chunk)
                    self.sent += len(chunk)
        except OSError:
            pass  # the client closed: what it took is in self.sent
        finally:
            self.done.set()
            conn.close()

    def close(self) -> None:
        import socket

        self._closed.set()
        for one in (self._server, *self._sockets):
            try:
                one.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it
            except OSError:
                pass
            one.close()
