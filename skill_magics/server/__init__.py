"""The Skills side panel's Jupyter server part: a jupyter_server extension.

It serves authenticated REST handlers per kernel id (handlers.py) that forward to the
kernel's own channel (core/panel/channel.py), signing each request with the key of the
kernel's connection file, which only the server that started the kernel holds. It is
enabled by ``jupyter-config/jupyter_server_config.d/skill_magics.json`` (installed with the
wheel into ``etc/jupyter``); the frontend is the prebuilt JupyterLab extension
``skill-magics-labextension`` (labextension/ in the repository). docs/security.md, *The
Skills side panel*, describes the trust boundary.
"""

from __future__ import annotations

from typing import Any

LABEXTENSION = "skill-magics-labextension"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "skill_magics.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """For ``jupyter labextension develop``: the build output beside the package."""
    return [{"src": "../labextension", "dest": LABEXTENSION}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from skill_magics.server.handlers import routes

    web_app = serverapp.web_app
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
    serverapp.log.info("skill_magics: the Skills side panel's handlers are on")


# the older name jupyter_server still looks for
load_jupyter_server_extension = _load_jupyter_server_extension
