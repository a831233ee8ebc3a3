#!/usr/bin/env bash
# Stop the companion server.
echo '{"stopped": true}'
