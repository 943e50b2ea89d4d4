#!/usr/bin/env bash
# Install the headless browser the browser tests (tests/browser/, marker `browser`) drive:
# Debian's chromium and chromium-driver. Does nothing when both are already there.
# .ci/run calls it before the test command; needs root (CI runs as root) and Debian's registry.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_browser.sh: chromium is missing and installing it needs root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
