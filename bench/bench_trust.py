"""Signatures and the team policy (prints figures; not a test).

    .venv/bin/python bench/bench_trust.py              # 20 verifications, 2,000 policy checks
    .venv/bin/python bench/bench_trust.py --quick

Measures (docs/trust.md):

1. **install-time verification**: a signed tag checked by ``git verify-tag`` (and the
   commit's ``cat-file`` steps) in a fetched snapshot, a detached ``.sig`` checked by
   ``ssh-keygen -Y find-principals`` + ``-Y verify`` over a 100 KB archive, and a sigstore
   bundle over it verified offline by the ``sigstore`` package (a private instance's trusted
   root: tests/sigstore_support.py): median per verification (each time from scratch);
2. **per-run policy overhead**: the planning of one run (``plan_script``: every check, the
   request with its signer) of an installed, signed skill, with a policy in force
   (``[sources] allow``, ``[signatures] require`` + ``allowed_signers``, ``[skills] block``
   by name and digest, ``[run] max_sandbox = "off"``) and without one, in blocks of 10
   runs interleaved A B B A, median difference; and ``policy.runs.check_run`` alone, which
   the executor runs once more right before the spawn: a run pays the difference plus one
   check. Target: <= 1 ms per run. No ``git`` or ``ssh-keygen`` runs per run (the verified result
   is found by digest).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from sources_support import make_repo, skill_md  # noqa: E402

from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.policy import runs as policy_runs  # noqa: E402
from skill_magics.core.run.launching.sandbox_profiles import ranks  # noqa: E402
from skill_magics.core.run.planning.settings import RunSettings  # noqa: E402
from skill_magics.core.sources.git import GitSnapshot  # noqa: E402
from skill_magics.core.sources.install import install_skills  # noqa: E402
from skill_magics.core.sources.spec import parse_source  # noqa: E402
from skill_magics.core.sources.sshsig import verify_detached  # noqa: E402


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def keygen(folder: Path, name: str) -> Path:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    verifications = 5 if opts.quick else 20
    checks = 300 if opts.quick else 2000
    root = Path(tempfile.mkdtemp(prefix="bench-trust-"))
    os.environ["SKILL_MAGICS_TRUST_DIR"] = str(root / "trust")
    os.environ.pop("SKILL_MAGICS_POLICY", None)
    os.chdir(root)
    key = keygen(root, "alice")
    blob = " ".join((root / "alice.pub").read_text().split()[:2])
    signers = root / "allowed_signers"
    signers.write_text(f"alice@example.com {blob}\n")
    os.environ["SKILL_MAGICS_ALLOWED_SIGNERS"] = str(signers)

    repo = make_repo(root / "greet", {"SKILL.md": skill_md("greet"), "scripts/hi.sh": "echo hi\n"})
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["config", "gpg.format", "ssh"],
        ["config", "user.signingkey", str(key)],
        ["-c", "user.name=A", "-c", "user.email=a@x", "tag", "-s", "-m", "v1", "v1"],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print("1. install-time verification (median of fresh verifications)")
    with GitSnapshot(parse_source(str(repo), ref="v1")) as snap:
        times = []
        for _ in range(verifications):
            snap._signatures.clear()
            started = time.perf_counter()
            signature = snap.signature("", str(signers))
            times.append(time.perf_counter() - started)
        assert signature.is_signed, signature
    print(f"   signed tag (git cat-file x2 + verify-tag): {ms(statistics.median(times))}")
    archive = root / "greet.skill"
    archive.write_bytes(os.urandom(100_000))
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "skill-magics", str(archive)],
        check=True,
        capture_output=True,
    )
    times = []
    for _ in range(verifications):
        started = time.perf_counter()
        signature = verify_detached(archive, Path(f"{archive}.sig"), str(signers), "archive")
        times.append(time.perf_counter() - started)
    assert signature.is_signed, signature
    print(f"   archive .sig, 100 KB (ssh-keygen x2):       {ms(statistics.median(times))}")
    try:
        from sigstore_support import Instance

        from skill_magics.core.trust.sigstore import verify_bundle
    except ImportError:
        print("   sigstore bundle: the sigstore package is not installed (the [sigstore] extra)")
    else:
        instance = Instance.new()
        trusted = instance.trusted_root(root / "trusted_root.json")
        bundle = instance.sign_file(archive, "alice@example.com", "https://issuer.test")
        times = []
        for _ in range(verifications):
            started = time.perf_counter()
            signature = verify_bundle(
                archive, bundle, ["alice@example.com https://issuer.test"], str(trusted)
            )
            times.append(time.perf_counter() - started)
        assert signature.is_signed, signature
        print(f"   sigstore bundle, 100 KB (offline, in process): {ms(statistics.median(times))}")

    into = root / "project" / ".agents" / "skills"
    install_skills(str(repo), ref="v1", into=into, approver=None)
    policy = root / "policy.toml"
    policy.write_text(
        f'[sources]\nallow = ["{repo}*"]\n'
        '[signatures]\nrequire = true\nallowed_signers = "allowed_signers"\n'
        '[skills]\nblock = ["other-*", "sha256:' + "0" * 64 + '"]\n'
        '[run]\nmax_sandbox = "off"\n'
    )
    manager = SkillManager([into])
    settings = RunSettings()
    planner = manager._planner

    def plan_once() -> float:
        started = time.perf_counter()
        planner.plan_script(settings, "greet", "scripts/hi.sh")
        return time.perf_counter() - started

    # Blocks of runs, A B B A: switching the variable makes the first plan after it pay for
    # caches keyed on the environment, on either side; that first plan is not counted.
    with_policy: list[float] = []
    without: list[float] = []
    for i in range(checks // 100):
        for which in "ABBA" if i % 2 == 0 else "BAAB":
            if which == "A":
                os.environ["SKILL_MAGICS_POLICY"] = str(policy)
            else:
                os.environ.pop("SKILL_MAGICS_POLICY", None)
            plan_once()
            (with_policy if which == "A" else without).extend(plan_once() for _ in range(10))
    os.environ["SKILL_MAGICS_POLICY"] = str(policy)
    skill_dir = into / "greet"
    calls = []
    for _ in range(checks):
        started = time.perf_counter()
        policy_runs.check_run(skill_dir, "greet", "off", False, ranks())
        calls.append(time.perf_counter() - started)
    a, b = statistics.median(with_policy), statistics.median(without)
    print("2. per-run policy overhead (target <= 1 ms)")
    lo_a, lo_b = min(with_policy), min(without)
    print(
        f"   plan one run, with the policy:    {ms(a)} median, {ms(lo_a)} min ({len(without)} runs)"
    )
    print(f"   plan one run, without a policy:   {ms(b)} median, {ms(lo_b)} min")
    print(f"   difference:                       {ms(a - b)} median, {ms(lo_a - lo_b)} min")
    check = statistics.median(calls)
    print(
        f"   policy.runs.check_run alone:      {ms(check)} median, "
        f"{ms(min(calls))} min ({checks} calls)"
    )
    # The executor checks the policy again right before the spawn: one check_run more.
    print(f"   a run (plan + launch re-check):   {ms(a - b + check)} median more")


if __name__ == "__main__":
    main()
