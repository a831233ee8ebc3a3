#!/bin/bash
# Create a project folder for an artifact.
set -e
name="${1:?Usage: init-artifact.sh <project-name>}"
echo "initialised $name"
