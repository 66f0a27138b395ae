#!/usr/bin/env bash
# `make toolchain`: build the P4 toolchain p4rcp needs from the sources pinned in
# tools/toolchain-sources.txt and install it under TOOLCHAIN_PREFIX:
#   PI (P4Runtime server library), bmv2 (simple_switch, simple_switch_CLI with its
#   Thrift Python bindings, simple_switch_grpc), p4c (p4c, p4c-bm2-ss, p4test), and
#   tna.p4 with its includes (p4c's Tofino back end) in TOOLCHAIN_TNA_INCLUDE.
#
# Environment (the Makefile passes these):
#   P4_SOURCES=DIR         local clones (DIR/behavioral-model, DIR/p4c, DIR/p4runtime, DIR/PI, ...)
#                          instead of cloning the pinned URLs
#   TOOLCHAIN_BMV2         speed (default: logging compiled out) or debug (bmv2's logging kept)
#   TOOLCHAIN_PREFIX       default /opt/p4
#   TOOLCHAIN_TNA_INCLUDE  default /opt/p4-tofino-include
#   TOOLCHAIN_BUILD        build folder (sources, logs, stamps), default toolchain-build
#   TOOLCHAIN_JOBS         parallel compile jobs, default 2
#   TOOLCHAIN_LOCK         a file each compile step holds with flock(1) while it runs (optional)
#
# Each step prints one line with its elapsed time, writes its whole output to a log it
# names, stops the build at the first failure, and is skipped when run again unless its
# command line changed (its stamp in $TOOLCHAIN_BUILD/stamps holds it; delete the stamp to redo it).
set -euo pipefail
TOOLS=$(cd "$(dirname "$0")" && pwd)
PINS=$TOOLS/toolchain-sources.txt

PREFIX=${TOOLCHAIN_PREFIX:-/opt/p4}
TNA_INCLUDE=${TOOLCHAIN_TNA_INCLUDE:-/opt/p4-tofino-include}
BUILD=$(realpath -m "${TOOLCHAIN_BUILD:-toolchain-build}")
VARIANT=${TOOLCHAIN_BMV2:-speed}
JOBS=${TOOLCHAIN_JOBS:-2}
LOCK=${TOOLCHAIN_LOCK:-}
SOURCES=${P4_SOURCES:+$(realpath -m "$P4_SOURCES")}
SRC=$BUILD/src
# Debian's python3, whatever python3 comes first on the caller's PATH (a pyenv shim, a venv):
# the installed scripts get its path in their #! line and its site-packages layout.
PYTHON=/usr/bin/python3
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

BUILD_PACKAGES=(
    autoconf automake bison build-essential cmake flex g++ git libtool libtool-bin pkg-config zstd
    libboost-dev libboost-filesystem-dev libboost-graph-dev libboost-iostreams-dev
    libboost-program-options-dev libboost-system-dev libboost-thread-dev
    libfl-dev libgc-dev libgmp-dev libabsl-dev
    libprotobuf-dev libprotoc-dev protobuf-compiler libgrpc-dev libgrpc++-dev protobuf-compiler-grpc
    libthrift-dev thrift-compiler python3-thrift python3-protobuf python3-grpcio python3-six
    libnanomsg-dev libpcap-dev libssl-dev libxxhash-dev libjsoncpp-dev libevent-dev libffi-dev
    libreadline-dev python3-dev
)

case $VARIANT in
    speed) BMV2_OPTIONS=(--disable-logging-macros --disable-elogger CXXFLAGS=-O3 CFLAGS=-O3) ;;
    debug) BMV2_OPTIONS=() ;;
    *) echo "[toolchain] TOOLCHAIN_BMV2=$VARIANT: expected speed or debug" >&2; exit 2 ;;
esac
PI_CONFIGURE=(./configure --prefix="$PREFIX" --with-proto --without-internal-rpc --without-cli --without-bmv2
              PYTHON=$PYTHON)
BMV2_CONFIGURE=(./configure --prefix="$PREFIX" --with-pi --with-thrift "${BMV2_OPTIONS[@]}"
                CPPFLAGS=-I"$PREFIX"/include LDFLAGS=-L"$PREFIX"/lib PYTHON=$PYTHON)
# Every FetchContent of p4c comes from a local folder or is switched off, and
# FETCHCONTENT_FULLY_DISCONNECTED makes any other download an error instead.
P4C_CMAKE=(cmake -S "$SRC/p4c" -B "$BUILD/p4c-build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX"
           -DCMAKE_UNITY_BUILD=ON -DFETCHCONTENT_FULLY_DISCONNECTED=ON
           -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$SRC/p4runtime" -DP4C_USE_PREINSTALLED_PROTOBUF=ON
           -DENABLE_PROTOBUF_STATIC=OFF -DENABLE_GTESTS=OFF -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF
           -DENABLE_P4TC=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_BMV2=ON -DENABLE_P4TEST=ON
           -DPython3_EXECUTABLE=$PYTHON)

say() { printf '[toolchain] %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# step NAME LOCKED FUNCTION [ARGS...]: run FUNCTION ARGS once; LOCKED=lock holds TOOLCHAIN_LOCK meanwhile.
# The stamp holds the step's function and arguments, so a changed command runs again.
step() {
    local name=$1 locked=$2 key="${*:3}"
    local stamp=$BUILD/stamps/$name log=$BUILD/logs/$name.log
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
        say "$(printf '%-16s' "$name") done before (stamp $stamp)"
        return
    fi
    rm -f "$stamp"
    mkdir -p "$BUILD/stamps" "$BUILD/logs"
    if [ "$locked" = lock ] && [ -n "$LOCK" ]; then
        exec 9>>"$LOCK"
        flock 9
    fi
    printf '[toolchain] %-16s log %s ... ' "$name" "$log"
    local start=$SECONDS status=0
    # In the background: bash ignores set -e inside a subshell whose status `||` tests.
    ( set -euxo pipefail; "${@:3}" ) >"$log" 2>&1 &
    wait $! || status=$?
    exec 9>&-
    local took=$((SECONDS - start))
    if [ "$status" != 0 ]; then
        printf 'FAILED after %s\n' "$(minutes $took)"
        grep -v '^+' "$log" | tail -n 25 | sed 's/^/    /' >&2  # without set -x's trace
        say "$name failed (exit $status); its whole output is in $log" >&2
        exit 1
    fi
    printf '%s\n' "$(minutes $took)"
    echo "$name $took" >>"$BUILD/step-seconds"
    printf '%s' "$key" >"$stamp"
}

build_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    echo "missing: ${missing[*]:-none}"
    [ ${#missing[@]} = 0 ] && return
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# Where to clone a pinned repository from: P4_SOURCES/NAME, or, for PI's submodules,
# P4_SOURCES/PI/<path> of a recursive clone; else its URL.
source_of() {
    local repo=$1 url=$2 dest=$3
    [ -z "$SOURCES" ] && { echo "$url"; return; }
    if [ -e "$SOURCES/$repo/.git" ]; then echo "$SOURCES/$repo"; return; fi
    if [[ $dest == PI/* ]] && [ -e "$SOURCES/$dest/.git" ]; then echo "$SOURCES/$dest"; return; fi
    echo "P4_SOURCES=$SOURCES has no clone $SOURCES/$repo (of $url)" >&2
    return 1
}

checkout_sources() {
    rm -rf "$SRC"
    local repo url commit dest paths from
    # shellcheck disable=SC2034  # the pins file's columns
    while read -r repo url commit dest paths; do
        [[ -z $repo || $repo == \#* ]] && continue
        from=$(source_of "$repo" "$url" "$dest")
        if [ -n "$SOURCES" ]; then
            git clone --quiet --no-checkout "$from" "$SRC/$dest"
        else
            # Blobs come on demand, so a sparse checkout downloads only what it checks out.
            git clone --quiet --no-checkout --filter=blob:none "$from" "$SRC/$dest" || {
                echo "could not clone $from: without internet access, clone the repositories of" \
                     "$PINS elsewhere and give their folder as P4_SOURCES=DIR" >&2
                return 1
            }
        fi
        if [ "$paths" != - ]; then
            git -C "$SRC/$dest" config core.sparseCheckout true
            mkdir -p "$SRC/$dest/.git/info"
            tr , '\n' <<<"$paths" >"$SRC/$dest/.git/info/sparse-checkout"
        fi
        git -C "$SRC/$dest" -c advice.detachedHead=false checkout --quiet --detach "$commit" || {
            echo "$from has no commit $commit (git -C $from fetch, or clone it again)" >&2
            return 1
        }
        echo "$dest: $commit from $from"
    done <"$PINS"
}

configure_pi() {
    cd "$SRC/PI"
    ./autogen.sh
    "${PI_CONFIGURE[@]}"
}

configure_bmv2() {
    cd "$SRC/behavioral-model"
    git clean -fdxq  # a configure with other options must not reuse objects of the last one
    ./autogen.sh
    "$@"
}

make_install() {
    make -C "$1" -j"$JOBS"
    as_root make -C "$1" install
}

build_p4c() {
    cmake --build "$BUILD/p4c-build" -j "$JOBS"
    as_root cmake --install "$BUILD/p4c-build"
}

install_tna_include() {
    as_root rm -rf "$TNA_INCLUDE"
    as_root mkdir -p "$TNA_INCLUDE"
    as_root cp -r "$SRC/tofino-p4include/backends/tofino/bf-p4c/p4include/." "$TNA_INCLUDE/"
    ls -R "$TNA_INCLUDE"
}

finish_prefix() {
    # PI installs an empty google/__init__.py next to its google.rpc modules: a regular
    # package that would hide Debian's google.protobuf from anyone who adds that folder.
    as_root find "$PREFIX/lib" -path '*-packages/google/__init__.py' -delete -print
    # The scripts (p4c, simple_switch_CLI, ...) run with Debian's python3, which has the Debian
    # packages they import (python3-thrift, ...), whatever python3 comes first on a user's PATH.
    { grep -l '^#!/usr/bin/env python3' "$PREFIX"/bin/* || true; } |
        as_root xargs -r sed -i "1s|^#!/usr/bin/env python3\$|#!$PYTHON|"
    head -qn 1 "$PREFIX"/bin/* | grep -a '^#!' | sort | uniq -c
    # Smaller archive, same behaviour: no debug symbols (bmv2's logging is a configure choice).
    local f
    while IFS= read -r -d '' f; do
        if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            as_root strip --strip-unneeded "$f"
        elif [[ $f == *.a ]]; then
            as_root strip --strip-debug "$f"
        fi
    done < <(find "$PREFIX/bin" "$PREFIX/lib" -type f -print0)
    as_root ldconfig
}

# What make toolchain-archive writes into the archive's manifest.
record_build() {
    local pins
    pins=$(grep -v '^#' "$PINS" | awk 'NF {print $1, $3, $4}')
    "$PYTHON" - "$BUILD/toolchain-build.json" <<PY
import json, sys
record = {
    "bmv2_variant": "$VARIANT",
    "jobs": $JOBS,
    "prefix": "$PREFIX",
    "tna_include": "$TNA_INCLUDE",
    "sources": [dict(zip(("repository", "commit", "unpacked_to"), line.split()))
                for line in """$pins""".splitlines()],
    "configured_with": {
        "PI": """${PI_CONFIGURE[*]}""",
        "bmv2": """${BMV2_CONFIGURE[*]}""",
        "p4c": """${P4C_CMAKE[*]}""".replace("$SRC/", "<src>/").replace("$BUILD/", "<build>/"),
    },
    "step_seconds": {n: int(s) for n, s in (l.split() for l in open("$BUILD/step-seconds"))},
}
json.dump(record, open(sys.argv[1], "w"), indent=1)
PY
}

mkdir -p "$BUILD"
say "building bmv2 ($VARIANT), PI, p4c and tna.p4 into $PREFIX and $TNA_INCLUDE; sources ${SOURCES:-from their git URLs}; build folder $BUILD"
step packages       open build_packages "${BUILD_PACKAGES[@]}"
step sources        open checkout_sources "${SOURCES:-urls}" "$(sha256sum "$PINS")"
step pi-configure   lock configure_pi "${PI_CONFIGURE[@]}"
step pi-build       lock make_install "$SRC/PI"
step bmv2-configure lock configure_bmv2 "${BMV2_CONFIGURE[@]}"
step bmv2-build     lock make_install "$SRC/behavioral-model" "$VARIANT"
step p4c-configure  lock "${P4C_CMAKE[@]}"
step p4c-build      lock build_p4c
step tna-include    open install_tna_include "$TNA_INCLUDE"
step finish         open finish_prefix "$PREFIX" "$VARIANT"
record_build
say "done: simple_switch $("$PREFIX"/bin/simple_switch --version), $("$PREFIX"/bin/p4c --version); 'make toolchain-archive' packs it"
