# /// script
# requires-python = ">=3.10"
# dependencies = ["pyyaml>=6"]
# ///
"""JSON on stdin, YAML on stdout."""
import json
import sys

import yaml

print(yaml.safe_dump(json.load(sys.stdin), sort_keys=True), end="")
