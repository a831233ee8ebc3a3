import argparse

from scripts.tool.core import repeat

parser = argparse.ArgumentParser(prog="tool")
parser.add_argument("--count", type=int, default=1)
print(repeat("tool", parser.parse_args().count))
