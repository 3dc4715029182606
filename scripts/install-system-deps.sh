#!/usr/bin/env bash
# Debian packages the test suite needs: the X11 desktop stack (Xvfb, a window manager,
# AT-SPI, real GTK applications), Debian's Chromium for browser tests, and the mingw-w64
# cross compilers, whose Windows headers the Windows backend's ABI test compiles its
# struct, constant, vtable (C) and interface id (C++: constexpr __uuidof) checks against,
# Node with npm for the MCP test that drives `rigway mcp` with the TypeScript SDK, and
# curl, jq and sqlite3, which the README's and docs/operations.md's commands use
# (tests/docs/ runs them as written), HAProxy, the load balancer in front of three
# gateway nodes in the failover test, and redis-server, which the fault tests start on a
# port of their own to kill and restart (the shared Redis is never touched).
set -euo pipefail
packages=(
  xvfb openbox dbus dbus-x11 at-spi2-core gtk-3-examples zenity xterm
  x11-utils x11-xserver-utils xdotool scrot fonts-dejavu-core
  chromium
  gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64
  nodejs
  curl jq sqlite3
  haproxy
  redis-server
)
# Node runs the official TypeScript MCP client in tests/mcp/test_ts_client.py. A Node
# from NodeSource bundles its own npm (Debian's npm package would conflict with it).
command -v npm >/dev/null 2>&1 || packages+=(npm)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
