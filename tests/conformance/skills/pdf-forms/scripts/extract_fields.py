import json
import sys


def get_fields(path):
    with open(path, encoding="utf-8") as fh:
        return [{"name": line[6:].strip()} for line in fh if line.startswith("field:")]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("Usage: extract_fields.py <input> <fields.json>")
        sys.exit(1)
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(get_fields(sys.argv[1]), out)
    print(f"wrote {sys.argv[2]}")
