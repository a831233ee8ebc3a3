import sys

from helpers import words

with open(sys.argv[1], encoding="utf-8") as fh:
    print(len(words(fh.read())))
