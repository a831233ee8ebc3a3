#!/usr/bin/env python3
"""Crash with a segmentation fault (sends itself SIGSEGV), like a buggy C extension would."""

import os
import signal
import sys

print("about to crash", flush=True)
print("this goes to stderr before the crash", file=sys.stderr, flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
