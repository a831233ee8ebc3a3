"""What a run printed: each stream decoded as it is read, secrets masked, capped (the rest
counted). The drive loop (drive.py) feeds one :class:`StreamCapture` per stream."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field

from skill_magics.core.base.secrets import Masks

OnOutput = Callable[[str, str], object]


# What codecs' incremental UTF-8 decoder does, without a decoder object per stream: decode
# what is complete, keep the bytes of a character cut by the read for the next one.
_UTF8_DECODE = codecs.utf_8_decode


@dataclass
class StreamCapture:
    """Keeps the first ``cap`` bytes of a stream as text, counts the rest.

    An incremental decoder carries a multibyte character split across reads over to the next
    read; invalid bytes become U+FFFD; ``\\r\\n`` is kept as written.

    With ``masks`` (the run's secret values), the text is redacted BEFORE the cap cuts it:
    decoded text goes through a :class:`StreamRedactor`, and the cap applies to what comes
    out, so a value straddling the cap is masked whole, never kept as a head. Past the cap,
    decoding goes on only until the redactor has settled the text up to it.
    """

    name: str
    cap: int
    kept_bytes: int = 0
    total_bytes: int = 0
    truncated: bool = False
    pieces: list[str] = field(default_factory=list)
    masks: Masks | None = None

    def __post_init__(self) -> None:
        self._pending = b""  # the start of a character the last read cut
        self._redactor = self.masks.stream() if self.masks else None

    def feed(self, data: bytes) -> str:
        """Account for ``data``; return the newly decoded text that was kept ('' past the cap)."""
        self.total_bytes += len(data)
        if self.truncated:
            return ""
        if self._redactor is not None:
            return self._keep(self._redactor.feed(self._decode(data)))
        room = self.cap - self.kept_bytes
        if len(data) > room:
            # Cut at the cap. Bytes of a character straddling the cut stay in the decoder and
            # are dropped, so the kept text re-encodes to an exact prefix of what was written.
            data = data[:room]
            self.truncated = True
        self.kept_bytes += len(data)
        text = self._decode(data)
        if text:
            self.pieces.append(text)
        return text

    def _decode(self, data: bytes, final: bool = False) -> str:
        """UTF-8 text of ``data`` after what was pending; invalid bytes become U+FFFD."""
        if self._pending:
            data = self._pending + data
        text, used = _UTF8_DECODE(data, "replace", final)
        self._pending = data[used:] if used < len(data) else b""
        return text

    def _keep(self, text: str) -> str:
        """Keep redacted ``text`` up to the cap (cut at a character boundary)."""
        if not text:
            return ""
        data = text.encode("utf-8", "surrogatepass")
        room = self.cap - self.kept_bytes
        if len(data) > room:
            text = data[:room].decode("utf-8", "ignore")
            data = text.encode("utf-8", "surrogatepass")
            self.truncated = True
        self.kept_bytes += len(data)
        if text:
            self.pieces.append(text)
        return text

    def finish(self) -> str:
        """End of stream: an incomplete trailing character becomes U+FFFD (unless truncated)."""
        if self.truncated:
            return ""
        if not self._pending and self._redactor is None:
            return ""  # nothing cut by the last read: nothing left to decode
        text = self._decode(b"", final=True)
        if self._redactor is not None:
            return self._keep(self._redactor.feed(text) + self._redactor.flush())
        if text:
            self.pieces.append(text)
        return text

    @property
    def text(self) -> str:
        if len(self.pieces) > 1:  # join once, keep one copy
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


__all__ = ["OnOutput", "StreamCapture"]
