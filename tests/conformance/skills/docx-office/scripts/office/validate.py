"""Validate an Office file."""
import sys

from validators import DocxValidator


def main():
    print("valid" if DocxValidator(sys.argv[1]).validate() else "invalid")


if __name__ == "__main__":
    main()
