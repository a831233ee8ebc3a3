import json
import sys


def overlaps(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        boxes = json.load(fh)
    bad = [(i, j) for i in range(len(boxes)) for j in range(i) if overlaps(boxes[i], boxes[j])]
    print(f"{len(bad)} overlapping pairs" if bad else "no overlaps")
