#!/usr/bin/env python3
"""Evaluate, improve, repeat."""
import argparse

from scripts.generate_report import generate_html
from scripts.run_eval import run_eval


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--skill-path", required=True)
    parser.add_argument("--eval-set", default="")
    parser.add_argument("--max-iterations", type=int, default=1)
    args = parser.parse_args()
    results = [run_eval(args.skill_path) for _ in range(args.max_iterations)]
    print(generate_html(results))


if __name__ == "__main__":
    main()
