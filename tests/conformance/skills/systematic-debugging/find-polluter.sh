#!/usr/bin/env bash
# Bisection script to find which test creates unwanted files.
if [ $# -ne 2 ]; then
  echo "Usage: $0 <file_to_check> <test_pattern>"
  exit 1
fi
echo "checking $1 after each of $2"
