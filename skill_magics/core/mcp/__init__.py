"""Skills over MCP (SEP-2640, ``io.modelcontextprotocol/skills``): a host and a server.

Plain Python, no IPython. Nothing here imports the ``mcp`` SDK at import time: only
:mod:`.connection` (the host's connection), :mod:`.stdio` (its stdio transport, each message
bounded) and :mod:`.server` do, inside functions, so
``import skill_magics`` works without the ``[mcp]`` extra.

Where the wire format was read (November 2026): the SEP's page
(modelcontextprotocol.io/seps/2640-skills-extension), the stable spec rendering
(modelcontextprotocol/ext-skills#138, ``specification/stable/skills.mdx``), FastMCP 4.2.3's
implementation (``fastmcp/skills/models.py``, ``extension.py``, ``_constants.py``,
``client/mixins/skills.py``) and the official SDK ``mcp`` 2.3.0 (``mcp/client/client.py``,
``mcp/client/session.py``, ``mcp/server/lowlevel/server.py``, ``mcp_types``).

The wire format implemented here:

- Capability: the server lists ``"io.modelcontextprotocol/skills": {}`` under
  ``capabilities.extensions`` (and the base ``resources`` capability); the client
  advertises the same identifier. The methods exist on the 2026-07-28 protocol
  (``MODERN_PROTOCOL_VERSIONS``); the SDK's ``Client(mode="auto")`` negotiates it with
  ``server/discover``.
- ``skills/list``: params ``{cursor?: string}``; result ``{skills: Skill[], nextCursor?:
  string, ttlMs, cacheScope, resultType: "complete"}``. The cursor is opaque; a host
  follows it until absent, here at most :data:`MAX_PAGES` pages and :data:`MAX_ENTRIES`
  entries, a cursor seen twice ends the walk (a hostile server cannot loop us).
- ``skills/get``: params ``{uri: string}`` (the skill's ``SKILL.md`` URI); result
  ``{skill: Skill, ttlMs, cacheScope, resultType}``; an unknown URI is error -32602.
- ``Skill``: ``{uri, frontmatter, resources, _meta?}``. ``uri`` names the skill's
  ``SKILL.md`` (``skill://<skill-path>/SKILL.md``); the last skill-path segment equals
  ``frontmatter.name``. ``frontmatter`` is the SKILL.md's YAML frontmatter as JSON values,
  verbatim. ``resources`` is either ``"dynamic"`` (files known only when read; never
  content-bound) or a list of ``{uri, digest, size}``: every file of the skill exactly once,
  ``SKILL.md`` included, each URI within the skill (same scheme and authority, path below
  the skill path, no ``.``/``..``/empty segments), ``digest`` = ``"sha256:" + 64 lowercase
  hex`` of the file's bytes, ``size`` its byte count (a non-negative integer).
- Limits: at most :data:`MAX_FILES` (512) files and :data:`MAX_BYTES` (16 MiB) per skill;
  a host checks both from the listing before reading anything.
- Files are read with the base ``resources/read`` (``{uri}`` -> ``{contents: [{uri,
  mimeType?, text} | {uri, mimeType?, blob (base64)}]}``), one content block per file; a
  text block's bytes are its UTF-8 encoding.

Host rules (the SEP's, enforced by :mod:`.host`): every read is checked against the listed
digest and size (an unlisted file is a mismatch), the fetched SKILL.md's frontmatter is
compared with the entry's field by field, files are fetched lazily (nothing is prefetched),
skills are named within a label the host assigns to the server (not the server's own
name), a skill's reads go only to the server that listed it and only to URIs it listed, an
approval binds to the full set of ``{uri, digest}`` (:func:`.wire.binding`). Digests give
consistency, not trust.
"""
