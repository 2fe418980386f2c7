#!/usr/bin/env bash
# libmlx5's data path against ours, on the same model NICs: each case runs Debian's perftest
# pair (`ib_TEST`) and mlx5-perf's pair (`mlx5-perf TEST -d ...`, the crate's own WQEs,
# doorbells and CQE parsing on the rings libmlx5 allocated, through the `verbs` backend) with
# the same flags under `mlx5-emu run`, server on mlx5_0 and client on mlx5_1, and prints per
# message the PCIe transactions and model statistics of each NIC: the requester (the client,
# mlx5_1) and the responder (the server, mlx5_0). docs/benchmarks.md has the last table and
# the explanation of every difference.
#
# Per message means a difference of two runs: every pair runs twice, with N1 and N2
# iterations, and each count is (count at N2 - count at N1) / (N2 - N1), so setup, the
# handshake and teardown cancel and only the steady state is left. The counts are the
# fabric's (`mlx5-emu run --pcie`), the larger of the two launchers' reports (the counters
# only grow; a launcher writes its report when its program ends). The client's row of the N2
# run gives the time each printed: for latency tests t_typical (usec), for bandwidth tests
# the average rate (MsgRate, Mpps). These are CPU-side numbers of the model under the
# emulator (every doorbell a trapped store and a socket round trip), not a NIC's.
#
# Builds nothing. Needs:
#   cargo build -p mlx5-emu -p mlx5-emu-preload
#   cargo build --release -p mlx5-perf --features verbs
# (a debug mlx5-perf works, but the emulator single-steps its BlueFlame copy: very slow).
#
# Usage: hw/emu/side-by-side.sh [REGEX]     (only the cases whose name matches REGEX)
# Environment:
#   MLX5_EMU_BIN    the launcher (default target/debug/mlx5-emu; the preload beside it)
#   MLX5_PERF_BIN   mlx5-perf built with `verbs` (default target/release/mlx5-perf)
#   SBS_TIMEOUT     seconds a side may take (default 180)
#   SBS_LOGS        where outputs and reports are kept (default: a new temporary directory)
#   SBS_FORMAT      `md` (default: a Markdown table) or `tsv` (one line per row, raw numbers)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
emu=${MLX5_EMU_BIN:-$target/debug/mlx5-emu}
perf=${MLX5_PERF_BIN:-$target/release/mlx5-perf}
limit=${SBS_TIMEOUT:-180}
logs=${SBS_LOGS:-$(mktemp -d /tmp/side-by-side.XXXXXX)}
format=${SBS_FORMAT:-md}
filter=${1:-}
mkdir -p "$logs"
export MLX5_EMU_DIR=${MLX5_EMU_DIR:-$logs/fabrics}

[ -x "$emu" ] || { echo "side-by-side.sh: no mlx5-emu at $emu" >&2; exit 2; }
[ -x "$perf" ] || { echo "side-by-side.sh: no mlx5-perf at $perf" >&2; exit 2; }
command -v jq >/dev/null || { echo "side-by-side.sh: needs jq" >&2; exit 2; }
if "$perf" write_lat -d none_such 2>&1 | grep -q "built without the"; then
    echo "side-by-side.sh: $perf was built without --features verbs" >&2
    exit 2
fi

next=$((30000 + $$ % 20000))
# free_port, wait_listen
. "$(dirname "$0")/ports.sh"

# The counts this script reports, in its column order.
fields='.pcie.mmio_writes, .stats.bf_writes, .stats.doorbells, .stats.bf_used,
    .pcie.dma_reads, .pcie.completions, .pcie.dma_writes, .pcie.bytes_down, .pcie.bytes_up,
    .stats.cqes, .stats.packets, .stats.retransmits'

# counts FILE...: per NIC (mlx5_0, then mlx5_1) one line of the counts, each the largest of
# the reports given; problems (bad MMIO, bad doorbells, memory faults) on a last line.
counts() {
    jq -rs "[.[].nics] | transpose | map(map([$fields]) | transpose | map(max) | @tsv)[]" "$@"
    jq -rs '[.[] | (.nics[].stats | .bad_mmio + .bad_doorbells + .bf_mismatch + .bf_incomplete)
        + .emulator.memory_faults] | max' "$@"
}

# The client's figure in its output $2 for test $1: t_typical (latency) or MsgRate (bandwidth)
# of the first result row.
figure() {
    local row
    row=$(awk '/#bytes/ { t = 1; next } t && /^ *[0-9]+ +[0-9]+ / { print; exit }' "$2")
    set -- "$1" $row
    case $1 in
    *_lat) echo "${6:-?} us" ;;
    *) echo "${6:-?} Mpps" ;;
    esac
}

# pair NAME ITERS PROGRAM... [-- CLIENT...]: one run, server `PROGRAM -d mlx5_0 -p PORT -n
# ITERS`, client the same (or CLIENT) on mlx5_1 to localhost; their outputs and reports in
# $logs/NAME.*. Fails with the reason on stdout.
pair() {
    local name=$1 iters=$2 port fabric="sbs$$-$1" server=() client=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    client=("$@")
    [ ${#client[@]} -gt 0 ] || client=("${server[@]}")
    free_port
    rm -f "$logs/$name".*
    timeout -k 5 "$limit" "$emu" run --fabric "$fabric" --pcie "$logs/$name.s.json" -- \
        stdbuf -oL "${server[@]}" -d mlx5_0 -p "$port" -n "$iters" >"$logs/$name.server" 2>&1 &
    local server=$! crc src
    if ! wait_listen "$port" "$server"; then
        wait "$server"
        echo "server never listened (logs $logs/$name.*)"
        return 1
    fi
    timeout -k 5 "$limit" "$emu" run --fabric "$fabric" --pcie "$logs/$name.c.json" -- \
        stdbuf -oL "${client[@]}" -d mlx5_1 -p "$port" -n "$iters" localhost >"$logs/$name.client" 2>&1
    crc=$?
    wait "$server"
    src=$?
    if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
        echo "client exit $crc, server exit $src (logs $logs/$name.*)"
        return 1
    fi
}

header_done=
header() {
    [ -n "$header_done" ] && return
    header_done=1
    if [ "$format" = md ]; then
        echo "| case | data path | NIC | MMIO | BF 64 B | DB rung | BF used | MRd | CplD | MWr | B down | B up | CQEs | packets | retx | client printed |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    else
        printf 'case\tpath\tnic\tmmio\tbf_writes\tdoorbells\tbf_used\tmrd\tcpld\tmwr\tbytes_down\tbytes_up\tcqes\tpackets\tretransmits\tprinted\n'
    fi
}

failed=0
# row CASE PATH N1 N2 TEST PROGRAM...: both runs of one data path, then its two lines.
row() {
    local case=$1 path=$2 n1=$3 n2=$4 test=$5 why
    shift 5
    local tag="$case.$path"
    if ! why=$(pair "$tag.a" "$n1" "$@") || ! why=$(pair "$tag.b" "$n2" "$@"); then
        echo "FAIL $case $path: $why" >&2
        failed=$((failed + 1))
        return
    fi
    local a b bad printed
    a=$(counts "$logs/$tag.a".*.json)
    b=$(counts "$logs/$tag.b".*.json)
    bad=$(echo "$b" | tail -1)
    [ "$bad" = 0 ] || echo "WARN $case $path: $bad bad MMIO / doorbell / memory faults" >&2
    printed=$(figure "$test" "$logs/$tag.b.client")
    header
    # Line 1 of each is mlx5_0 (the server: responder), line 2 mlx5_1 (the client: requester).
    paste <(echo "$a" | head -2) <(echo "$b" | head -2) |
        awk -F'\t' -v n=$((n2 - n1)) -v c="$case" -v p="$path" -v t="$printed" -v f="$format" '
        function num(x) { s = sprintf("%.3f", x); sub(/\.?0+$/, "", s); return s }
        {
            nic = NR == 1 ? "responder (server)" : "requester (client)"
            line = ""
            for (i = 1; i <= 12; i++) {
                v = num(($(i + 12) - $i) / n)
                line = line (f == "md" ? " | " : "\t") v
            }
            if (f == "md")
                print "| " c " | " p " | " nic line " | " (NR == 2 ? t : "") " |"
            else
                print c "\t" p "\t" (NR == 1 ? "responder" : "requester") line "\t" (NR == 2 ? t : "")
        }' | tac
}

# case_ NAME N1 N2 TEST ARGS... [-- OUR EXTRA ARGS...]: perftest's pair, then ours with the
# same ARGS (and the extra ones, e.g. --mode), each run with N1 and N2 iterations.
case_() {
    local name=$1 n1=$2 n2=$3 test=$4
    shift 4
    if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
        return
    fi
    local args=() ours=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    ours=("$@")
    row "$name" libmlx5 "$n1" "$n2" "$test" "ib_$test" "${args[@]}"
    row "$name" ours "$n1" "$n2" "$test" "$perf" "$test" "${args[@]}" "${ours[@]}"
}

# lib_ NAME N1 N2 TEST VAR=VALUE ARGS...: perftest's pair alone, with libmlx5's environment
# variable VAR set on both sides (rdma-core providers/mlx5/mlx5.c and verbs.c read
# MLX5_SHUT_UP_BF, MLX5_POST_SEND_PREFER_BF and MLX5_SCATTER_TO_CQE at context or QP creation).
lib_() {
    local name=$1 n1=$2 n2=$3 test=$4 var=$5
    shift 5
    if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
        return
    fi
    row "$name" "libmlx5 $var" "$n1" "$n2" "$test" env "$var" "ib_$test" "$@"
}

# ours_ NAME N1 N2 TEST ARGS... -- EXTRA...: mlx5-perf's pair alone, with ARGS and EXTRA (a
# flag perftest does not have, e.g. --mode), labelled by EXTRA.
ours_() {
    local name=$1 n1=$2 n2=$3 test=$4
    shift 4
    if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
        return
    fi
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    row "$name" "ours $*" "$n1" "$n2" "$test" "$perf" "$test" "${args[@]}" "$@"
}

# mixed_ NAME N1 N2 TEST ARGS...: the two data paths paired with each other over perftest's
# exchange (mlx5-perf --perftest-exchange): perftest's server with our client, then ours
# with perftest's client. Each NIC's row is its own data path's.
mixed_() {
    local name=$1 n1=$2 n2=$3 test=$4
    shift 4
    if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
        return
    fi
    local ours=("$perf" "$test" --perftest-exchange "$@") theirs=("ib_$test" "$@")
    row "$name" "ours client, libmlx5 server" "$n1" "$n2" "$test" "${theirs[@]}" -- "${ours[@]}"
    row "$name" "libmlx5 client, ours server" "$n1" "$n2" "$test" "${ours[@]}" -- "${theirs[@]}"
}

# Latency: 100 and 300 iterations (ping-pong: each NIC sends and receives one message per
# iteration in write_lat and send_lat; only the client posts in read_lat and atomic_lat).
case_ write_lat 100 300 write_lat
lib_ write_lat 100 300 write_lat MLX5_SHUT_UP_BF=1
ours_ write_lat 100 300 write_lat -- --mode db
case_ write_lat_4k 100 300 write_lat -s 4096
lib_ write_lat_4k 100 300 write_lat MLX5_SHUT_UP_BF=1 -s 4096
ours_ write_lat_4k 100 300 write_lat -s 4096 -- --mode db
case_ write_lat_220 100 300 write_lat -s 220
lib_ write_lat_220 100 300 write_lat MLX5_SHUT_UP_BF=1 -s 220
ours_ write_lat_220 100 300 write_lat -s 220 -- --mode db
# The same WQE in a 4 KiB send queue on both sides: libmlx5 sizes its SQ from -t
# (max_send_wr), ours makes it at least 64 WQEBBs whatever -t.
lib_ write_lat_220_t16 100 300 write_lat MLX5_SHUT_UP_BF=1 -s 220 -t 16
ours_ write_lat_220_t16 100 300 write_lat -s 220 -t 16 -- --mode db
case_ write_lat_8_noinline 100 300 write_lat -s 8 -I 0
lib_ write_lat_8_noinline 100 300 write_lat MLX5_POST_SEND_PREFER_BF=0 -s 8 -I 0
ours_ write_lat_8_noinline 100 300 write_lat -s 8 -I 0 -- --mode db
case_ send_lat 100 300 send_lat
lib_ send_lat 100 300 send_lat MLX5_SCATTER_TO_CQE=0
mixed_ send_lat 100 300 send_lat
case_ send_lat_236 100 300 send_lat -s 236
lib_ send_lat_236 100 300 send_lat MLX5_SHUT_UP_BF=1 -s 236
ours_ send_lat_236 100 300 send_lat -s 236 -- --mode db
case_ send_lat_4k 100 300 send_lat -s 4096
case_ send_lat_8_noinline 100 300 send_lat -s 8 -I 0
lib_ send_lat_8_noinline 100 300 send_lat MLX5_SCATTER_TO_CQE=0 -s 8 -I 0
case_ read_lat 100 300 read_lat
case_ read_lat_4k 100 300 read_lat -s 4096
case_ atomic_lat 100 300 atomic_lat
# Bandwidth: 1000 and 2000 iterations (multiples of -Q, -l and the TX depth).
case_ write_bw_8 1000 2000 write_bw -s 8
lib_ write_bw_8 1000 2000 write_bw MLX5_POST_SEND_PREFER_BF=0 -s 8
ours_ write_bw_8 1000 2000 write_bw -s 8 -- --mode db
case_ write_bw_8_inline 1000 2000 write_bw -s 8 -I 8
case_ write_bw_4k 1000 2000 write_bw -s 4096
case_ write_bw_64k 1000 2000 write_bw -s 65536
case_ write_bw_8_list 1000 2000 write_bw -s 8 -l 8
ours_ write_bw_8_list 1000 2000 write_bw -s 8 -l 8 -- --mode bf
case_ write_bw_8_q1 1000 2000 write_bw -s 8 -Q 1
case_ write_bw_8_q10 1000 2000 write_bw -s 8 -Q 10
case_ send_bw_8 1000 2000 send_bw -s 8
lib_ send_bw_8 1000 2000 send_bw MLX5_SCATTER_TO_CQE=0 -s 8
mixed_ send_bw_8 1000 2000 send_bw -s 8
case_ send_bw_4k 1000 2000 send_bw -s 4096
case_ send_bw_8_list 1000 2000 send_bw -s 8 -l 8
case_ read_bw_8 1000 2000 read_bw -s 8
case_ read_bw_4k 1000 2000 read_bw -s 4096
case_ read_bw_8_list 1000 2000 read_bw -s 8 -l 8
case_ atomic_bw 1000 2000 atomic_bw
case_ atomic_bw_list 1000 2000 atomic_bw -l 8

[ "$failed" -eq 0 ] || { echo "$failed row(s) failed" >&2; exit 1; }
