import sys

from mathlib import add

print(add(*map(int, sys.argv[1:3])))
