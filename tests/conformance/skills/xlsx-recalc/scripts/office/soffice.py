"""Run LibreOffice headless (the program may be missing)."""
import os
import shutil
import subprocess
import sys

PROGRAM = "skill-magics-absent-soffice"


def get_soffice_env():
    return dict(os.environ, SAL_USE_VCLPLUGIN="svp")


def run_soffice(args):
    if shutil.which(PROGRAM) is None:
        print(f"{PROGRAM} is not installed: install LibreOffice", file=sys.stderr)
        return 127
    return subprocess.run([PROGRAM, *args], env=get_soffice_env()).returncode


if __name__ == "__main__":
    sys.exit(run_soffice(sys.argv[1:]))
