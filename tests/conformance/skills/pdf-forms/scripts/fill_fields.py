import json
import sys

from extract_fields import get_fields


def fill(form, values, output):
    names = {f["name"] for f in get_fields(form)}
    with open(values, encoding="utf-8") as fh:
        given = {k: v for k, v in json.load(fh).items() if k in names}
    with open(output, "w", encoding="utf-8") as out:
        out.writelines(f"{k}={v}\n" for k, v in sorted(given.items()))
    return len(given)


if __name__ == "__main__":
    print(f"filled {fill(*sys.argv[1:4])} fields")
