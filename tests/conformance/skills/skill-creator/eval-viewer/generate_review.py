"""Write a static review page for a workspace."""
import argparse
import pathlib

parser = argparse.ArgumentParser()
parser.add_argument("workspace")
parser.add_argument("--static", default="review.html")
args = parser.parse_args()
pathlib.Path(args.static).write_text(f"<h1>{args.workspace}</h1>", encoding="utf-8")
print(f"wrote {args.static}")
