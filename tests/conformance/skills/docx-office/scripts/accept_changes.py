"""Accept all tracked changes (through LibreOffice)."""
import sys

from office.soffice import run_soffice

if __name__ == "__main__":
    sys.exit(run_soffice(["--headless", "--accept-changes", *sys.argv[1:]]))
