#!/bin/bash
# Example: two diagrams.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
python3 "$here/generate_schematic.py" "Transformer architecture" -o figures/a.png
python3 "$here/generate_schematic.py" "MAPK pathway" -o figures/b.png --doc-type poster
