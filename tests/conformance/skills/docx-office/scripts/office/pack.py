"""Pack a folder back into an Office file, validating first."""
import sys

from validators import DocxValidator

if __name__ == "__main__":
    ok = DocxValidator(sys.argv[1]).validate()
    print("packed" if ok else "invalid")
