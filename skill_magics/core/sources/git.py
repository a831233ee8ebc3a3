"""A git commit as a Snapshot, fetched with the real ``git``, hardened.

What runs, in a fresh temporary folder that is always removed:

    git init --bare                                  (no template: no hooks, no config)
    git fetch --depth 1 --no-tags origin REF:refs/skill-magics/fetched
    git ls-tree -r -z -l COMMIT [-- SUBFOLDER]       (the listing: modes, sizes, paths)
    git cat-file --batch                             (each chosen blob's raw bytes)

Nothing is checked out, so no ``.gitattributes`` filter, LFS smudge, ident or eol conversion
runs and no hook can (``core.hooksPath=/dev/null`` as well); submodules are listed, never
fetched. Credentials are never prompted for (``GIT_TERMINAL_PROMPT=0``, no askpass,
``credential.helper=`` empty, ssh ``BatchMode=yes``, ``GCM_INTERACTIVE=never``); the system
config is not read (``GIT_CONFIG_NOSYSTEM=1``), the caller's ``GIT_*`` variables are dropped,
and only the source's own transport is allowed (``protocol.allow=never`` but one). Objects are
checked as they arrive (``fetch.fsckObjects``). Every git call has a time limit and runs in
its own process group, killed whole at the limit or on an interrupt.

A commit given as the ref is fetched directly (protocol v2 servers allow it); a server that
refuses (protocol v0 without ``uploadpack.allowAnySHA1InWant``) or an abbreviated hash falls
back to fetching every branch and tag, then resolving the commit among them.

Example (not run as a doctest: it clones a repository)::

    with GitSnapshot(parse_source("https://github.com/openai/skills")) as snap:
        snap.commit, len(snap.entries)
    # -> ('b2f5...', 95)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import BinaryIO

from skill_magics.core.base.errors import RunInterrupted, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import NO_ANCHORS, Anchors, Signature
from skill_magics.core.run.launching.process import kill_group, run_process
from skill_magics.core.run.launching.spawning import start_helper
from skill_magics.core.sources.snapshot import FILE, LINK, SPECIAL, SUBMODULE, Entry, Snapshot
from skill_magics.core.sources.sourcespec import GIT, SourceSpec, is_commit

FETCH_TIMEOUT = 300.0  # seconds for a fetch (a large repository over a slow link)
STEP_TIMEOUT = 60.0  # seconds for the local steps
FETCHED_REF = "refs/skill-magics/fetched"
_MAX_OUTPUT = 64 << 20  # ls-tree of a very large repository


def git_program() -> str:
    """The git executable; SourceError naming the fix when there is none."""
    found = shutil.which("git")
    if found is None:
        raise SourceError(
            "git is not installed (not on PATH): install it (e.g. apt-get install git) to "
            "install skills from repositories, or give a .skill/.zip file or a folder"
        )
    return found


def hardened_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs with: the caller's, without its ``GIT_*`` variables, and with
    every prompt, helper and system config switched off."""
    env = {
        k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("GIT_")
    }
    env.pop("SSH_ASKPASS", None)
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS_REQUIRE": "never",
            "GCM_INTERACTIVE": "never",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
            "GIT_PROTOCOL_FROM_USER": "0",
            "LC_ALL": "C",
            "LANGUAGE": "C",
        }
    )
    return env


def hardened_config(scheme: str) -> list[str]:
    """``-c`` options for every git call: only ``scheme`` may be used, no hooks, no
    credential helper, no fsmonitor, no submodules, objects checked on arrival."""
    pairs = [
        "protocol.allow=never",
        f"protocol.{scheme}.allow=always",
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "credential.helper=",
        "credential.interactive=false",
        "init.templateDir=",
        "submodule.recurse=false",
        "fetch.recurseSubmodules=false",
        "fetch.fsckObjects=true",
        "transfer.fsckObjects=true",
        "gc.auto=0",
        "maintenance.auto=false",
        "http.followRedirects=initial",
        "filter.lfs.smudge=",
        "filter.lfs.process=",
        "filter.lfs.required=false",
    ]
    out: list[str] = []
    for pair in pairs:
        out += ["-c", pair]
    return out


class GitSnapshot(Snapshot):
    """The files of one commit of a repository (see the module docstring for how)."""

    def __init__(
        self,
        spec: SourceSpec,
        *,
        timeout: float = FETCH_TIMEOUT,
        cancel: threading.Event | None = None,
    ) -> None:
        if spec.kind != GIT:
            raise ValueError("GitSnapshot needs a git source")
        super().__init__(spec)
        self.git = git_program()
        self.timeout = timeout
        self.cancel = cancel
        self.env = hardened_env()
        self.config = hardened_config(spec.scheme)
        self.tmp = tempfile.mkdtemp(prefix="skill-magics-git-")
        self.repo = os.path.join(self.tmp, "repo.git")
        self._reader: subprocess.Popen | None = None
        self._reader_lock = threading.Lock()
        self._signatures: dict[tuple[str, tuple[str, ...]], Signature] = {}
        try:
            self._fetch()
            self._list()
        except BaseException:
            self.close()
            raise

    # -- running git ---------------------------------------------------------------------

    def _run(self, args: Sequence[str], *, timeout: float = STEP_TIMEOUT, what: str = "") -> str:
        command = [self.git, *self.config, *args]
        outcome = run_process(
            command,
            cwd=self.tmp,
            env=self.env,
            payload=None,
            timeout=timeout,
            max_output_size=_MAX_OUTPUT,
            cancel=self.cancel,
            die_with_parent=True,  # git and its helpers (git-remote-https, ssh) die with us
        )
        if outcome.cancelled:
            raise RunInterrupted(f"{what or 'git'} was interrupted; nothing was installed")
        if outcome.timed_out:
            raise SourceError(
                f"{what or 'git'} did not finish within {timeout:g} s; nothing was installed. "
                "Check the URL and the network, or try again"
            )
        if outcome.returncode != 0:
            raise _GitFailed(outcome.stderr.text or outcome.stdout.text)
        if outcome.stdout.truncated:
            raise SourceError(f"{what or 'git'} printed more than {_MAX_OUTPUT >> 20} MB")
        return outcome.stdout.text

    def _git_dir(self, *args: str) -> list[str]:
        return ["--git-dir", self.repo, *args]

    # -- the signature -------------------------------------------------------------------

    def signature(self, path: str, signers: str | None, anchors: Anchors = NO_ANCHORS) -> Signature:
        """The signed tag or commit at the fetched ref (core/trust/gitsig.py); one check
        per snapshot, allowed-signers file and trusted OpenPGP keys, whichever skill asks."""
        from skill_magics.core.trust.gitsig import verify_ref

        key = (signers or "", anchors.openpgp)
        if key not in self._signatures:
            config = ["-c", f"gpg.ssh.allowedSignersFile={signers or os.devnull}"]

            def run(args: list[str]) -> tuple[int, str]:
                outcome = run_process(
                    [self.git, *self.config, *config, *self._git_dir(*args)],
                    cwd=self.tmp,
                    env=self.env,
                    payload=None,
                    timeout=STEP_TIMEOUT,
                    max_output_size=1 << 20,
                    cancel=self.cancel,
                    die_with_parent=True,
                )
                if outcome.cancelled:
                    raise RunInterrupted("git verify was interrupted; nothing was installed")
                if outcome.timed_out:
                    raise SourceError(f"git verify did not finish within {STEP_TIMEOUT:g} s")
                return outcome.returncode, outcome.stdout.text + outcome.stderr.text

            assert self.commit is not None
            self._signatures[key] = verify_ref(
                run, FETCHED_REF, self.commit, self.spec.ref, anchors.openpgp
            )
        return self._signatures[key]

    # -- fetching ------------------------------------------------------------------------

    def _fetch(self) -> None:
        spec = self.spec
        self._run(["init", "--bare", "--quiet", self.repo], what="git init")
        url = spec.location
        if spec.scheme == "file" and not url.startswith("file://"):
            url = "file://" + url  # the file transport honours --depth; a bare path does not
        self._run(self._git_dir("config", "remote.origin.url", url), what="git config")
        ref = spec.ref or "HEAD"
        shown = visible(str(spec))
        try:
            self._fetch_refspec([f"+{ref}:{FETCHED_REF}"], depth=True)
        except _GitFailed as exc:
            if not is_commit(spec.ref):
                raise SourceError(_fetch_message(shown, spec.ref, str(exc))) from None
            # A server that does not serve commits by hash, or an abbreviated hash: fetch the
            # branches and tags in full and look for the commit among them.
            try:
                self._fetch_refspec(
                    ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"],
                    depth=False,
                )
                commit = self._run(
                    self._git_dir("rev-parse", "--verify", "--quiet", f"{spec.ref}^{{commit}}"),
                    what="git rev-parse",
                ).strip()
            except _GitFailed as again:
                raise SourceError(_fetch_message(shown, spec.ref, str(again))) from None
            self._run(self._git_dir("update-ref", FETCHED_REF, commit), what="git update-ref")
        try:
            commit = self._run(
                self._git_dir("rev-parse", "--verify", f"{FETCHED_REF}^{{commit}}"),
                what="git rev-parse",
            ).strip()
        except _GitFailed:
            raise SourceError(
                f"{shown}: the ref {spec.ref or 'HEAD'!r} is not a commit (a tag of a tree or a "
                "blob?); give a branch, tag or commit"
            ) from None
        if is_commit(spec.ref) and not commit.startswith((spec.ref or "").lower()):
            raise SourceError(f"{shown}: fetched {commit}, not the commit asked for")
        self.commit = commit

    def _fetch_refspec(self, refspecs: list[str], *, depth: bool) -> None:
        args = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"]
        if depth:
            args += ["--depth", "1"]
        self._run(self._git_dir(*args, "origin", *refspecs), timeout=self.timeout, what="git fetch")

    # -- listing and reading -------------------------------------------------------------

    def _list(self) -> None:
        args = ["ls-tree", "-r", "-z", "-l", "--full-tree", self.commit or FETCHED_REF]
        if self.spec.subfolder:
            args += ["--", self.spec.subfolder]
        listing = self._run(self._git_dir(*args), what="git ls-tree")
        for record in listing.split("\0"):
            if not record:
                continue
            meta, _tab, path = record.partition("\t")
            mode, kind, oid, size = meta.split(None, 3)
            if kind == "commit":
                self.entries.append(Entry(path, SUBMODULE, key=oid))
            elif mode == "120000":
                self.entries.append(Entry(path, LINK, key=oid))
            elif kind == "blob" and mode in ("100644", "100755", "100664"):
                self.entries.append(Entry(path, FILE, int(size), mode == "100755", oid))
            else:
                self.entries.append(Entry(path, SPECIAL, key=oid))
        if self.spec.subfolder and not self.entries:
            raise SourceError(
                f"{visible(str(self.spec))}: the commit {self.commit} has no folder "
                f"{visible(self.spec.subfolder)!r}; check --path (subfolder=)"
            )

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        with self._reader_lock:
            proc = self._cat_file()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(entry.key.encode("ascii") + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().decode("ascii", "replace").split()
                if len(header) != 3 or header[1] != "blob":
                    raise SourceError(f"git cannot read {visible(entry.path)} ({' '.join(header)})")
                left = int(header[2])
                while left:
                    chunk = proc.stdout.read(min(left, 1 << 16))
                    if not chunk:
                        raise SourceError(f"git stopped while reading {visible(entry.path)}")
                    out.write(chunk)
                    left -= len(chunk)
                proc.stdout.read(1)  # the newline after each object
            except (OSError, ValueError) as exc:
                self._stop_reader()
                raise SourceError(f"git cannot read {visible(entry.path)}: {exc}") from None
            except BaseException:
                self._stop_reader()  # an interrupt mid-object leaves the stream unusable
                raise

    def _cat_file(self) -> subprocess.Popen:
        if self._reader is None:
            # Under the tree guard as every git command of an install: it dies with the kernel.
            self._reader = start_helper(
                [self.git, *self.config, *self._git_dir("cat-file", "--batch")],
                guard=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self.tmp,
                env=self.env,
                process_group=0,
            )
        return self._reader

    def _stop_reader(self) -> None:
        proc, self._reader = self._reader, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        kill_group(proc.pid, 9)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel
            pass

    def close(self) -> None:
        self._stop_reader()
        shutil.rmtree(self.tmp, ignore_errors=True)


class _GitFailed(Exception):
    """A git command exited non-zero; its message is git's stderr."""


def _fetch_message(shown: str, ref: str | None, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = next((ln for ln in lines if ln.startswith("fatal:")), lines[-1] if lines else "")
    detail = visible(detail.removeprefix("fatal: "))[:300]
    low = detail.lower()
    if "couldn't find remote ref" in low or "not our ref" in low or "unadvertised" in low:
        hint = f"the ref {ref!r} does not exist there: give a branch, tag or full commit hash"
    elif "authentication" in low or "could not read username" in low or "permission denied" in low:
        hint = (
            "it needs credentials, and none are asked for here: use a public URL, an ssh URL "
            "with a key in your ssh agent, or clone it yourself and give the local path"
        )
    elif "not found" in low or "does not appear to be a git repository" in low:
        hint = "no repository there: check the URL"
    else:
        hint = "check the URL, the ref and the network"
    return f"Cannot fetch {shown}: {detail} ({hint}); nothing was installed"


__all__ = ["GitSnapshot", "git_program", "hardened_env", "hardened_config", "FETCH_TIMEOUT"]
