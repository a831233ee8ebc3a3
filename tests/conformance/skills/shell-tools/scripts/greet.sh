#!/usr/bin/env bash
# Greet someone.
source "$(dirname "$0")/lib/common.sh"
say_hello "${1:-world}"
