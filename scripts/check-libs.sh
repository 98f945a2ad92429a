#!/usr/bin/env bash
# `make`'s check that the libraries it links are installed, through
# pkg-config: MODULE:DEBIAN-PACKAGE arguments.  It installs nothing (that
# is `make deps`); what is missing is one line naming the pkg-config
# module and the Debian package to install.
set -uo pipefail
pc=${PKG_CONFIG:-pkg-config}
if ! command -v "$pc" >/dev/null; then
  echo "make: $pc is not installed: install the Debian package pkg-config, or run make deps" >&2
  exit 1
fi
missing=() pkgs=()
for d in "$@"; do
  mod=${d%%:*} pkg=${d#*:}
  "$pc" --exists "$mod" 2>/dev/null || { missing+=("$mod"); pkgs+=("$pkg"); }
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ ${#missing[@]} -eq 1 ]]; then
  echo "make: missing library ${missing[0]} (pkg-config module ${missing[0]} not found): install the Debian package ${pkgs[0]}, or run make deps" >&2
else
  echo "make: missing libraries ${missing[*]} (pkg-config modules not found): install the Debian packages ${pkgs[*]}, or run make deps" >&2
fi
exit 1
