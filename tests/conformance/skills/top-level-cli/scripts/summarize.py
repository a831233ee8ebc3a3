"""Count the rows of a CSV file."""
import argparse
import csv

parser = argparse.ArgumentParser()
parser.add_argument("path")
args = parser.parse_args()
with open(args.path, newline="", encoding="utf-8") as fh:
    print(f"{sum(1 for _ in csv.reader(fh)) - 1} rows")
