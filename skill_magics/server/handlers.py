"""REST handlers of the Skills side panel: ``/skill-magics/kernels/<kernel id>/<op>``.

Every handler is authenticated and authorized as the server's own kernel API is
(``@tornado.web.authenticated``, ``@authorized`` on the "kernels" resource; a POST from a
page also passes jupyter_server's XSRF check). The kernel id is looked up in THIS server's
kernel manager: its connection file names the kernel's socket and its key signs the request
(core/panel/channel.py), so a request reaches exactly the kernel it names, and a kernel this
server did not start cannot be reached at all. The blocking socket call runs in a thread.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from skill_magics.core.base.errors import SidePanelError
from skill_magics.core.panel import channel

READS = ("state", "skills", "skill_md", "result")
ACTIONS = ("decide", "revoke", "install", "add_dir")
AUTH_RESOURCE = "kernels"


class _SidePanelHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    def _kernel(self, kernel_id: str) -> tuple[str, bytes]:
        """(connection file, key) of a kernel this server runs; 404 for any other id."""
        manager = self.kernel_manager
        if kernel_id not in manager:
            raise web.HTTPError(404, f"no kernel {kernel_id} in this server")
        kernel = manager.get_kernel(kernel_id)
        path = getattr(kernel, "connection_file", "")
        key = getattr(getattr(kernel, "session", None), "key", b"")
        if not path or not key:
            raise web.HTTPError(409, "not a local, signed kernel: the side panel cannot reach it")
        return str(path), bytes(key)

    async def _forward(self, kernel_id: str, op: str, args: dict[str, Any]) -> None:
        path, key = self._kernel(kernel_id)
        try:
            result = await asyncio.to_thread(channel.ask, path, key, op, args)
        except SidePanelError as exc:
            self.set_status(409)
            self.finish(json.dumps({"error": str(exc)}))
            return
        self.finish(json.dumps(result))


class ReadHandler(_SidePanelHandler):
    @web.authenticated
    @authorized
    async def get(self, kernel_id: str, op: str) -> None:
        args = {name: self.get_argument(name) for name in self.request.arguments}
        await self._forward(kernel_id, op, args)


class ActionHandler(_SidePanelHandler):
    @web.authenticated
    @authorized
    async def post(self, kernel_id: str, op: str) -> None:
        try:
            args = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(args, dict):
            raise web.HTTPError(400, "the body must be a JSON object")
        await self._forward(kernel_id, op, args)


def routes(base_url: str) -> list[tuple[str, type[APIHandler]]]:
    """The handlers under ``base_url``."""
    kernel = r"/skill-magics/kernels/(?P<kernel_id>[\w-]+)/"
    return [
        (url_path_join(base_url, kernel + f"(?P<op>{'|'.join(READS)})"), ReadHandler),
        (url_path_join(base_url, kernel + f"(?P<op>{'|'.join(ACTIONS)})"), ActionHandler),
    ]
