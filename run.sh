#!/usr/bin/env bash
# Installs what is missing, builds ruccl, and runs the main example:
# four in-process ranks on the host device, Sum and Mean all-reduce, checked.
set -euo pipefail
cd "$(dirname "$0")"
source tools/setup.sh
ruccl_setup
ruccl_build build
echo "== build/examples/all_reduce $*"
exec build/examples/all_reduce "$@"
