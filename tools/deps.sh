#!/usr/bin/env bash
# `make deps`: install what p4rcp needs from the package registries.
# Idempotent. Never builds p4c or bmv2; where they are missing (on PATH and in P4_PREFIX/bin,
# default /opt/p4/bin) it installs, in this order: the toolchain archive P4_TOOLCHAIN_ARCHIVE=FILE;
# else the newest archive for this distribution and architecture in P4_TOOLCHAIN_DIR (default
# ../shared/toolchain); else the official p4lang packages if their repository serves this
# distribution and answers quickly; and otherwise ends with a warning naming the ways to get them.
set -euo pipefail
cd "$(dirname "$0")/.."

# g++ and python3-dev: CPyCppyy (the ns3 wheel's bindings) builds from source; the ns-3 engine's module is C++.
DEBIAN_PACKAGES=(mininet ethtool iproute2 nftables psmisc tcpdump tshark python3-venv python3-pip procps zstd g++ python3-dev)
P4_TOOLCHAIN_ARCHIVE=${P4_TOOLCHAIN_ARCHIVE:-}
P4_TOOLCHAIN_DIR=${P4_TOOLCHAIN_DIR:-../shared/toolchain}
P4_PREFIX=${P4_PREFIX:-/opt/p4}
P4_PACKAGES=(p4lang-p4c p4lang-bmv2)
P4_REPO_TIMEOUT=5
VENV=.venv
SYSTEM_PYTHON=/usr/bin/python3

say() { printf '[deps] %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing_debian_packages() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

install_debian_packages() {
    local missing
    missing=$(missing_debian_packages "$@")
    if [ -z "$missing" ]; then
        say "Debian packages present: $*"
        return
    fi
    say "installing Debian packages: $missing"
    as_root apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
}

install_python_packages() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV from $SYSTEM_PYTHON (with system site-packages, for Debian's mininet)"
        "$SYSTEM_PYTHON" -m venv --system-site-packages "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
    say "Python packages installed in $VENV"
}

install_rust_crates() {
    if ! command -v cargo >/dev/null; then
        install_debian_packages cargo
    fi
    cargo fetch --quiet --manifest-path hosts/Cargo.toml
    say "Rust crates fetched for hosts/"
}

toolchain_missing() {
    local tool missing=()
    for tool in p4c-bm2-ss p4test simple_switch simple_switch_CLI; do
        PATH="$PATH:$P4_PREFIX/bin" command -v "$tool" >/dev/null || missing+=("$tool")
    done
    echo "${missing[@]}"
}

p4lang_repo_url() {
    # The p4lang project publishes packages for these distributions only.
    . /etc/os-release
    case "$ID:$VERSION_ID" in
        debian:11|debian:12) echo "https://download.opensuse.org/repositories/home:/p4lang/Debian_${VERSION_ID}/" ;;
        ubuntu:20.04|ubuntu:22.04|ubuntu:24.04) echo "https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}/" ;;
    esac
}

# Installs an archive of `make toolchain-archive` (tools/toolchain_archive.py says what that checks).
install_toolchain_archive() {
    say "installing the P4 toolchain archive $1"
    as_root "$SYSTEM_PYTHON" -m tools.toolchain_archive install "$1" || {
        echo "[deps] ERROR: the P4 toolchain archive $1 did not install (see above)" >&2
        exit 1
    }
    report_toolchain
}

# Each program's version and build, and a warning naming the configure option for each capability p4rcp
# needs that the build lacks (README, "The toolchain").
report_toolchain() {
    P4_PREFIX="$P4_PREFIX" "$SYSTEM_PYTHON" -c 'from p4rcp.toolchain import toolchain_report
for line in toolchain_report(): print("[deps] " + line)' || echo "[deps] WARNING: the toolchain report failed (above)" >&2
}

install_toolchain() {
    local missing url archive
    missing=$(toolchain_missing)
    if [ -z "$missing" ]; then
        say "P4 toolchain found:"
        report_toolchain
        [ -z "$P4_TOOLCHAIN_ARCHIVE" ] || say "P4_TOOLCHAIN_ARCHIVE=$P4_TOOLCHAIN_ARCHIVE not installed: a toolchain is there"
        return
    fi
    if [ -n "$P4_TOOLCHAIN_ARCHIVE" ]; then
        install_toolchain_archive "$P4_TOOLCHAIN_ARCHIVE"
        return
    fi
    archive=$("$SYSTEM_PYTHON" -m tools.toolchain_archive select "$P4_TOOLCHAIN_DIR")
    if [ -n "$archive" ]; then
        install_toolchain_archive "$archive"
        return
    fi
    url=$(p4lang_repo_url)
    if [ -n "$url" ] && curl -fsS -m "$P4_REPO_TIMEOUT" -o /dev/null "${url}Release.key" 2>/dev/null; then
        say "installing ${P4_PACKAGES[*]} from the p4lang repository $url"
        curl -fsS -m 30 "${url}Release.key" | gpg --dearmor | as_root tee /etc/apt/trusted.gpg.d/home_p4lang.gpg >/dev/null
        echo "deb $url /" | as_root tee /etc/apt/sources.list.d/home:p4lang.list >/dev/null
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${P4_PACKAGES[@]}"
        report_toolchain
        return
    fi
    local why
    if [ -n "$url" ]; then
        why="the p4lang package repository $url did not answer within ${P4_REPO_TIMEOUT} s."
    else
        why="the p4lang package repository does not serve $(. /etc/os-release; echo "$PRETTY_NAME")."
    fi
    cat >&2 <<WARN
[deps] WARNING: the P4 toolchain is missing: $missing
[deps]   p4rcp needs p4c (p4c-bm2-ss, p4test) and bmv2 (simple_switch, simple_switch_CLI), on PATH
[deps]   or in $P4_PREFIX/bin (P4_PREFIX=DIR for another prefix). p4rcp does not build them. Three ways:
[deps]   1. the p4lang packages ${P4_PACKAGES[*]} (p4c's README): $why
[deps]   2. a toolchain archive that your lab packed with 'make toolchain-archive' on a machine that has one:
[deps]      make deps P4_TOOLCHAIN_ARCHIVE=FILE, or put it in P4_TOOLCHAIN_DIR=$P4_TOOLCHAIN_DIR
[deps]      ($(realpath -m "$P4_TOOLCHAIN_DIR"), now without one for this system);
[deps]   3. your own build, following p4c's and bmv2's READMEs, with bmv2 configured --with-pi --with-thrift
[deps]      and in the speed configuration of its README ("Performance": --disable-logging-macros
[deps]      --disable-elogger), into $P4_PREFIX; README, "The toolchain", gives the tested versions.
[deps]   Until then make build / make run stop, and the tests that need them are skipped.
WARN
}

install_debian_packages "${DEBIAN_PACKAGES[@]}"
install_python_packages
install_rust_crates
install_toolchain
say "done"
