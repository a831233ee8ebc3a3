"""Add a comment to an unpacked document."""
import argparse
import json

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("paragraph", type=int)
    parser.add_argument("text")
    parser.add_argument("--author", default="Claude")
    args = parser.parse_args()
    print(json.dumps({"paragraph": args.paragraph, "author": args.author}))
