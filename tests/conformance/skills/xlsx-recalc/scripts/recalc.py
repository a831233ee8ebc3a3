"""Recalculate every formula with LibreOffice and report errors as JSON."""
import json
import sys

from office.soffice import run_soffice


def main():
    code = run_soffice(["--headless", "--recalc", sys.argv[1]])
    print(json.dumps({"status": "error" if code else "success"}))
    return 1 if code else 0


if __name__ == "__main__":
    sys.exit(main())
