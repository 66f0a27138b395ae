#!/usr/bin/env bash
# Benchmark of the p4rcp end hosts (`make bench-hosts`).
#
#  1. Pacing accuracy: one fixed-rate flow at 1, 10, 100 and 500 Mb/s over
#     loopback; achieved = frame bits the sender put on the socket between
#     its first and last DATA packet / that time. Target: within 1%.
#  2. CPU per flow: N concurrent 1 Mb/s flows from one sender process to one
#     receiver process over loopback (getrusage / /proc). Target: < 1% of a
#     core per flow (a busy-waiting sender burns 100% per flow).
#  3. Throughput on a 20 Mb/s, 30 ms RTT link with 1% random loss (data
#     direction) and a 75 KB (one BDP) buffer, for allegro, vivace-loss and
#     tcp (CUBIC): one long flow each. Utilisation = frame bits of the
#     delivered data / 20 Mb/s (UDP: bytes * (mss + 78) / mss; TCP: bytes *
#     1514 / 1448). Whole flow, and steady state = from 20 s on (from the
#     flow's trace; TCP has no trace). Target: PCC >= 90% in steady state.
#
# Needs root (network namespaces), iproute2 and python3. The link is veth +
# netem + tbf if the kernel has sch_netem, else TUN devices joined by
# `p4rcp-linkem`. Everything it creates is removed on exit.
#
# Environment: BENCH_PACING_SECS (5), BENCH_CPU_FLOWS (100), BENCH_CPU_SECS
# (10), BENCH_LINK_SECS (60), P4RCP_LINK=linkem to force the user-space link.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CRATE="$(dirname "$HERE")"
PACING_SECS="${BENCH_PACING_SECS:-5}"
CPU_FLOWS="${BENCH_CPU_FLOWS:-100}"
CPU_SECS="${BENCH_CPU_SECS:-10}"
LINK_SECS="${BENCH_LINK_SECS:-60}"
STEADY_FROM=$(( LINK_SECS / 3 < 20 ? LINK_SECS / 3 : 20 ))

if [ "$(id -u)" != 0 ]; then
    echo "bench-hosts: needs root (network namespaces)" >&2
    exit 2
fi
for tool in ip tc python3 cargo; do
    command -v "$tool" >/dev/null || { echo "bench-hosts: $tool not found" >&2; exit 2; }
done

echo "== building (release)"
cargo build --release --quiet --manifest-path "$CRATE/Cargo.toml"
BIN="$CRATE/target/release/p4rcp-host"
LINKEM="$CRATE/target/release/p4rcp-linkem"

TAG="p4hb$$"
NS_LO="${TAG}lo"
NS_A="${TAG}a"
NS_B="${TAG}b"
WORK="$(mktemp -d /tmp/p4rcp-bench.XXXXXX)"
PIDS=()

cleanup() {
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null || true
    done
    sleep 0.3
    for ns in "$NS_LO" "$NS_A" "$NS_B"; do
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

json() { # json FILE EXPR: evaluate EXPR on the records (list `r`) of FILE
    python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith('{')]; print($2)" "$1"
}

RESULTS="$WORK/results.txt"
: >"$RESULTS"
row() { printf '%-44s %-28s %s\n' "$1" "$2" "$3" | tee -a "$RESULTS"; }

# ------------------------------------------------------------------ pacing
echo "== pacing accuracy on loopback (${PACING_SECS} s per rate)"
ip netns add "$NS_LO"
ip -n "$NS_LO" link set lo up
ip netns exec "$NS_LO" "$BIN" recv --bind 127.0.0.1:6577 --tcp-port 0 --out "$WORK/lo_recv.jsonl" 2>"$WORK/lo_recv.log" &
PIDS+=($!)
RECV_LO=$!
sleep 0.3
for r in 1 10 100 500; do
    out="$WORK/pace_$r.jsonl"
    ip netns exec "$NS_LO" "$BIN" send --to 127.0.0.1 --duration "$PACING_SECS" --cc "fixed:${r}mbit" --max-rate 1gbit --out "$out" || true
    ratio=$(json "$out" "r[0]['send_rate_kbps']/($r*1000.0)")
    good=$(json "$out" "round(r[0]['mean_rate_kbps']/1000.0, 2)")
    verdict=$(python3 -c "print('PASS' if abs($ratio-1) <= 0.01 else 'FAIL')")
    row "pacing fixed:${r}mbit achieved/target" "$(printf '%.4f' "$ratio") (goodput ${good} Mb/s)" "$verdict"
done

# --------------------------------------------------------------------- CPU
echo "== CPU per flow: $CPU_FLOWS flows of 1 Mb/s for ${CPU_SECS} s"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
t0=$(ticks "$RECV_LO")
ip netns exec "$NS_LO" "$BIN" send --to 127.0.0.1 --duration "$CPU_SECS" --cc fixed:1mbit --flows "$CPU_FLOWS" \
    --stats --out "$WORK/cpu.jsonl" 2>"$WORK/cpu_stats.txt" || true
t1=$(ticks "$RECV_LO")
stats=$(grep send_stats "$WORK/cpu_stats.txt" | tail -1)
read -r send_pct recv_pct done_flows <<<"$(python3 -c "
import json,sys
s=json.loads(sys.argv[1])['stats']
n=$CPU_FLOWS; wall=s['wall_s']
print(100*s['cpu_s']/wall/n, 100*(($t1-$t0)/$HZ)/wall/n, s['flows_completed'])" "$stats")"
row "CPU per flow, sender (% of one core)" "$(printf '%.3f' "$send_pct") ($done_flows/$CPU_FLOWS done)" \
    "$(python3 -c "print('PASS' if $send_pct < 1 and $done_flows == $CPU_FLOWS else 'FAIL')")"
row "CPU per flow, receiver (% of one core)" "$(printf '%.3f' "$recv_pct")" \
    "$(python3 -c "print('PASS' if $recv_pct < 1 else 'FAIL')")"
kill "$RECV_LO" 2>/dev/null || true

# -------------------------------------------------------------------- link
echo "== 20 Mb/s, 30 ms RTT, 1% loss, 75 KB buffer (${LINK_SECS} s per scheme)"
ip netns add "$NS_A"
ip netns add "$NS_B"
ip -n "$NS_A" link set lo up
ip -n "$NS_B" link set lo up
netem=no
if [ "${P4RCP_LINK:-}" != linkem ] && ip netns exec "$NS_A" tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
    ip netns exec "$NS_A" tc qdisc del dev lo root
    netem=yes
fi
if [ $netem = yes ]; then
    LINK="veth + netem + tbf"
    ip link add p4ba netns "$NS_A" type veth peer name p4bb netns "$NS_B"
    ip -n "$NS_A" addr add 10.202.0.1/24 dev p4ba
    ip -n "$NS_B" addr add 10.202.0.2/24 dev p4bb
    ip -n "$NS_A" link set p4ba up
    ip -n "$NS_B" link set p4bb up
    tc -n "$NS_A" qdisc add dev p4ba root handle 1: netem delay 15ms loss 1%
    tc -n "$NS_A" qdisc add dev p4ba parent 1: handle 2: tbf rate 20mbit burst 32kbit limit 75000
    tc -n "$NS_B" qdisc add dev p4bb root netem delay 15ms
else
    LINK="tun + p4rcp-linkem (no sch_netem in this kernel)"
    for ns in "$NS_A" "$NS_B"; do
        ip -n "$ns" tuntap add dev p4bt mode tun
        ip -n "$ns" link set p4bt up
    done
    ip -n "$NS_A" addr add 10.202.0.1/24 dev p4bt
    ip -n "$NS_B" addr add 10.202.0.2/24 dev p4bt
    "$LINKEM" --ns-a "$NS_A" --dev-a p4bt --ns-b "$NS_B" --dev-b p4bt \
        --delay 15ms --loss 1 --rate 20mbit --limit 75k 2>"$WORK/linkem.log" &
    PIDS+=($!)
fi
echo "   link: $LINK"
ip netns exec "$NS_B" "$BIN" recv --out "$WORK/link_recv.jsonl" 2>"$WORK/link_recv.log" &
PIDS+=($!)
sleep 0.3
for cc in allegro vivace-loss tcp; do
    out="$WORK/link_$cc.jsonl"
    trace="$WORK/link_$cc.trace"
    ip netns exec "$NS_A" "$BIN" send --to 10.202.0.2 --duration "$LINK_SECS" --cc "$cc" --flow-id 7001 \
        --timeout $((LINK_SECS + 60)) --out "$out" --trace "$trace" || true
    read -r whole steady good <<<"$(python3 - "$out" "$trace" "$cc" "$STEADY_FROM" <<'EOF'
import json, sys
out, trace, cc, steady_from = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
r = [json.loads(l) for l in open(out) if l.strip().startswith('{')][0]
frame = 1514 / 1448 if cc.startswith('tcp') else 1078 / 1000
fct = r['fct_s'] or float('inf')
whole = r['size_bytes'] * 8 * frame / fct / 20e6
good = r['size_bytes'] * 8 / fct / 1e6
steady = float('nan')
try:
    s = [json.loads(l) for l in open(trace) if '"sample"' in l]
    g = [x['goodput_kbps'] for x in s if x['t_s'] >= steady_from]
    if g:
        steady = sum(g) / len(g) * frame / 20e3
except FileNotFoundError:
    pass
print(whole, steady if steady == steady else -1, good)
EOF
)"
    if [ "$cc" = tcp ]; then
        row "utilisation $cc (whole flow; steady n/a)" "$(printf '%.3f (%.2f Mb/s)' "$whole" "$good")" "(baseline)"
    else
        row "utilisation $cc (whole flow)" "$(printf '%.3f (%.2f Mb/s)' "$whole" "$good")" ""
        row "utilisation $cc (steady, t >= ${STEADY_FROM} s)" "$(printf '%.3f (%.2f Mb/s)' "$steady" "$(python3 -c "print($steady*20*1448/1514 if '$cc'.startswith('tcp') else $steady*20*1000/1078)")")" \
            "$(python3 -c "print('PASS' if $steady >= 0.9 else 'FAIL')")"
    fi
done

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), link: $LINK)"
cat "$RESULTS"
