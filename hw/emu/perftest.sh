#!/usr/bin/env bash
# The perftest matrix on the emulator: each case runs a perftest server (mlx5_0) and client
# (mlx5_1, to localhost; with rdma_cm, -R or -z, to mlx5_0's address 10.47.0.1) as two
# processes under `mlx5-emu run` on a fabric of its own, with a free TCP port and a timeout. A
# case passes when both sides exit 0, both print a result row under perftest's `#bytes` header
# (the server of ib_read_lat / ib_atomic_lat prints none), and the fabric counted no bad MMIO,
# no bad doorbell and no access to unmapped program memory. One line per case; exits 1 if any
# case failed. docs/emulator.md has the last results.
#
# The numbers are what the CPU measures of the model under the emulator (every doorbell a
# trapped store and a round trip to the fabric server), not a NIC's.
#
# Usage: hw/emu/perftest.sh [REGEX]        (only the cases whose name matches REGEX)
# Environment:
#   MLX5_EMU_BIN      the mlx5-emu binary (default: target/debug/mlx5-emu of the workspace;
#                     the preload must be beside it: cargo build -p mlx5-emu -p mlx5-emu-preload)
#   PERFTEST_TIMEOUT  seconds a side may take (default 120)
#   PERFTEST_LOGS     where each side's output is kept (default: a new temporary directory)
#   MLX5_EMU_DIR      the fabrics' directory (default: a directory under PERFTEST_LOGS)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
emu=${MLX5_EMU_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/mlx5-emu}
limit=${PERFTEST_TIMEOUT:-120}
logs=${PERFTEST_LOGS:-$(mktemp -d /tmp/perftest-emu.XXXXXX)}
filter=${1:-}
mkdir -p "$logs"
export MLX5_EMU_DIR=${MLX5_EMU_DIR:-$logs/fabrics}

if [ ! -x "$emu" ]; then
    echo "perftest.sh: no mlx5-emu at $emu (cargo build -p mlx5-emu -p mlx5-emu-preload)" >&2
    exit 2
fi
for t in ib_write_lat ib_write_bw ib_send_lat ib_send_bw ib_read_lat ib_read_bw \
    ib_atomic_lat ib_atomic_bw; do
    command -v "$t" >/dev/null || { echo "perftest.sh: $t is not installed" >&2; exit 2; }
done

next=$((20000 + $$ % 20000))
# free_port, wait_listen
. "$(dirname "$0")/ports.sh"

# The result rows of a side's output: the lines after perftest's `#bytes` header that start
# with a size.
rows() {
    awk '/#bytes/ { t = 1; next } t && /^ *[0-9]+ +[0-9]+ / { print }' "$1"
}

# One line of numbers for the summary: for latency tests t_typical and t_avg (usec), for
# bandwidth tests BW average (MB/s) and MsgRate (Mpps); of the first and (with -a) last row.
summary() {
    local prog=$1 file=$2 first last count
    first=$(rows "$file" | head -1)
    last=$(rows "$file" | tail -1)
    count=$(rows "$file" | wc -l)
    case $prog in
    *_lat)
        # #bytes #iterations t_min t_max t_typical t_avg ... (duration mode, -D:
        # #bytes #iterations t_avg tps)
        set -- $first
        if [ $# -eq 4 ]; then
            echo "$1 B: average $3 us ($2 iterations)"
            return
        fi
        local s="$1 B: typical $5 us, average $6 us"
        if [ "$count" -gt 1 ]; then
            set -- $last
            s="$s; $1 B: typical $5 us, average $6 us ($count sizes)"
        fi
        echo "$s"
        ;;
    *)
        # #bytes #iterations BW_peak BW_average MsgRate
        set -- $first
        local s="$1 B: $4 MB/s, $5 Mpps"
        if [ "$count" -gt 1 ]; then
            set -- $last
            s="$s; $1 B: $4 MB/s, $5 Mpps ($count sizes)"
        fi
        echo "$s"
        ;;
    esac
}

pass=0
fail=0
knowns=0
# case_ NAME LINK PROGRAM ARGS...: server `PROGRAM -d mlx5_0 ARGS`, client
# `PROGRAM -d mlx5_1 ARGS localhost` (`... 10.47.0.1` with -R or -z), on fabric NAME with
# link LINK (ib or roce). With `known=REASON` before it, a failure is reported as KNOWN (not counted) with the reason.
case_() {
    local name=$1 link=$2 prog=$3
    shift 3
    if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
        return
    fi
    local port fabric="pt$$-$name" slog="$logs/$name.server" clog="$logs/$name.client"
    local report="$logs/$name.pcie.json" started=$SECONDS
    local server src crc why cm="" try
    case " $* " in *" -R "* | *" -z "*) cm=1 ;; esac
    for try in $(seq 1 20); do
        free_port
        rm -f "$report"
        why=""
        # Line-buffered, so that a side killed by the timeout still shows how far it got; in
        # a process group of its own (setsid), which a retry below ends.
        setsid timeout -k 5 "$limit" "$emu" run --fabric "$fabric-$try" --link "$link" -- \
            stdbuf -oL "$prog" -d mlx5_0 -p "$port" "$@" >"$slog" 2>&1 &
        server=$!
        if [ -n "$cm" ]; then
            # rdma_cm (-R, -z): the client names mlx5_0 by its address, and the server
            # listens only where nothing outside the fabric shows it: a client that came too
            # early is rejected (perftest prints the event: REJECTED = 8, or UNREACHABLE = 7
            # for a UD id's SIDR) before the server saw anything of it, and starts again.
            while :; do
                timeout -k 5 "$limit" "$emu" run --fabric "$fabric-$try" --link "$link" \
                    --pcie "$report" -- stdbuf -oL "$prog" -d mlx5_1 -p "$port" "$@" \
                    10.47.0.1 >"$clog" 2>&1
                crc=$?
                [ "$crc" -ne 0 ] && grep -Eq 'Unexpected CM event bl blka [78]' "$clog" &&
                    kill -0 "$server" 2>/dev/null && [ $((SECONDS - started)) -lt "$limit" ] ||
                    break
                sleep 0.1
            done
            # perftest's own race with -R: the server listens for the test's connections
            # only after the exchange, and a client that gets there first is rejected while
            # the server waits on: the pair starts over while half the time limit is left
            # (on two cores with three busy loops beside, 4 of 16 tries raced).
            if [ "$crc" -ne 0 ] && [ "$try" -lt 20 ] && [ $((SECONDS - started)) -lt $((limit / 2)) ] &&
                grep -Eq 'RDMA_CM_EVENT_(REJECTED; error: 8|UNREACHABLE; error: 1)\.' "$clog"; then
                kill -- -"$server" 2>/dev/null
                wait "$server"
                continue
            fi
        elif wait_listen "$port" "$server"; then
            timeout -k 5 "$limit" "$emu" run --fabric "$fabric-$try" --link "$link" \
                --pcie "$report" -- stdbuf -oL "$prog" -d mlx5_1 -p "$port" "$@" localhost \
                >"$clog" 2>&1
            crc=$?
        else
            crc=-1
            why=" server never listened"
            : >"$clog"
        fi
        break
    done
    wait "$server"
    src=$?
    [ "$src" -eq 0 ] || why="$why server exit $src"
    [ "$crc" -eq 0 ] || why="$why client exit $crc"
    # The passive side of ib_read_lat and ib_atomic_lat prints no table: only the client
    # posts, the server closes after the handshake (perftest read_lat.c / atomic_lat.c).
    case $prog in
    ib_read_lat | ib_atomic_lat) ;;
    *) [ -n "$(rows "$slog")" ] || why="$why no server table" ;;
    esac
    [ -n "$(rows "$clog")" ] || why="$why no client table"
    # The fabric's counters when the client ended: what the model counts as a driver's
    # mistake, and program memory the server found unmapped, must be none.
    if [ -f "$report" ]; then
        local bad
        bad=$(grep -Eo '"(bad_mmio|bad_doorbells|memory_faults)": [1-9][0-9]*' "$report" |
            tr -d '"' | tr '\n' ' ')
        [ -z "$bad" ] || why="$why counters: $bad"
    elif [ "$crc" -ne -1 ]; then
        why="$why no report"
    fi
    local took=$((SECONDS - started))
    if [ -z "$why" ]; then
        pass=$((pass + 1))
        printf 'PASS  %-20s %3ds  %s\n' "$name" "$took" "$(summary "$prog" "$clog")"
    elif [ -n "${known:-}" ]; then
        knowns=$((knowns + 1))
        printf 'KNOWN %-20s %3ds %s (%s)\n' "$name" "$took" "$why" "$known"
    else
        fail=$((fail + 1))
        printf 'FAIL  %-20s %3ds %s (logs %s.*)\n' "$name" "$took" "$why" "$logs/$name"
    fi
}

# Latency (default 1000 iterations): RC, UC and UD where perftest offers them (write: RC UC;
# send: RC UC UD; read and atomic: RC only), all sizes (not atomic: its size is fixed),
# inline, events (not write: perftest refuses -e there), the older ibv_post_send path, SRQ,
# on-demand paging, duration mode, RoCE.
case_ write_lat_rc ib ib_write_lat
case_ write_lat_uc ib ib_write_lat -c UC
case_ write_lat_all ib ib_write_lat -n 100 -a
case_ write_lat_uc_all ib ib_write_lat -n 100 -a -c UC
case_ write_lat_inline ib ib_write_lat -s 64 --inline_size 64
case_ write_lat_old ib ib_write_lat --use_old_post_send
case_ write_lat_roce roce ib_write_lat -x 0
case_ write_lat_uc_roce roce ib_write_lat -c UC -x 0
case_ send_lat_rc ib ib_send_lat
case_ send_lat_uc ib ib_send_lat -c UC
case_ send_lat_ud ib ib_send_lat -c UD
case_ send_lat_all ib ib_send_lat -n 100 -a
case_ send_lat_uc_all ib ib_send_lat -n 100 -a -c UC
case_ send_lat_ud_all ib ib_send_lat -n 100 -a -c UD
# perftest 4.5-0.17's event loop in ib_send_lat waits on one channel for both CQs, polls
# once per event and re-arms before polling; under the model's arm rule (an arm over a CQE not
# yet polled fires at once, docs/model.md "Arming and events") it can read the send CQ's
# event as the receive's and fall out of step (docs/emulator.md, "perftest on the emulator").
known="perftest 4.5-0.17 event loop, see docs/emulator.md" case_ send_lat_event ib ib_send_lat -e
case_ send_lat_ud_event ib ib_send_lat -c UD -e
case_ send_lat_inline ib ib_send_lat -s 128 --inline_size 128
case_ send_lat_ud_inline ib ib_send_lat -c UD -s 128 --inline_size 128
case_ send_lat_old ib ib_send_lat --use_old_post_send
case_ send_lat_srq ib ib_send_lat --use-srq
case_ send_lat_odp ib ib_send_lat --odp
case_ send_lat_duration ib ib_send_lat -D 2
case_ send_lat_roce roce ib_send_lat -x 0
case_ send_lat_ud_roce roce ib_send_lat -c UD -x 0
case_ read_lat_rc ib ib_read_lat
case_ read_lat_all ib ib_read_lat -n 100 -a
case_ read_lat_event ib ib_read_lat -e
case_ read_lat_roce roce ib_read_lat -x 0
case_ atomic_lat_rc ib ib_atomic_lat
case_ atomic_lat_cmp ib ib_atomic_lat -A CMP_AND_SWAP
case_ atomic_lat_event ib ib_atomic_lat -e
case_ atomic_lat_roce roce ib_atomic_lat -x 0

# Bandwidth (default 5000 iterations, 64 KiB): small and large sizes, UC / UD, several QPs (4:
# each on a low-latency bfreg of its own; 16: libmlx5's default context has 4 low-latency and
# 11 medium bfregs, so the 16th QP shares a medium one), post lists, events, inline,
# bidirectional, SRQ, path MTU, on-demand paging (not atomic: perftest refuses it), an MR per
# QP, duration mode, RoCE.
case_ write_bw_rc ib ib_write_bw
case_ write_bw_8 ib ib_write_bw -s 8
case_ write_bw_1m ib ib_write_bw -n 200 -s 1048576
case_ write_bw_all ib ib_write_bw -n 100 -a
case_ write_bw_uc ib ib_write_bw -c UC
case_ write_bw_q4 ib ib_write_bw -q 4
case_ write_bw_uc_q4 ib ib_write_bw -c UC -q 4
case_ write_bw_q16 ib ib_write_bw -q 16 -n 1000
case_ write_bw_list ib ib_write_bw -s 64 -l 8
case_ write_bw_inline ib ib_write_bw -s 64 --inline_size 64
case_ write_bw_bidir ib ib_write_bw -b
case_ write_bw_old ib ib_write_bw --use_old_post_send -s 64 -l 8
case_ write_bw_mtu1024 ib ib_write_bw -m 1024
case_ write_bw_odp ib ib_write_bw --odp
case_ write_bw_mr_per_qp ib ib_write_bw --mr_per_qp -q 4
case_ write_bw_duration ib ib_write_bw -D 2
case_ write_bw_roce roce ib_write_bw -x 0
case_ send_bw_rc ib ib_send_bw
case_ send_bw_8 ib ib_send_bw -s 8
case_ send_bw_1m ib ib_send_bw -n 200 -s 1048576
case_ send_bw_uc ib ib_send_bw -c UC
case_ send_bw_ud ib ib_send_bw -c UD
case_ send_bw_ud_64 ib ib_send_bw -c UD -s 64
case_ send_bw_q4 ib ib_send_bw -q 4
case_ send_bw_ud_q4 ib ib_send_bw -c UD -q 4
case_ send_bw_q16 ib ib_send_bw -q 16 -n 1000
case_ send_bw_ud_q16 ib ib_send_bw -c UD -q 16 -n 1000
case_ send_bw_list ib ib_send_bw -s 64 -l 8
case_ send_bw_inline ib ib_send_bw -s 64 --inline_size 64
case_ send_bw_event ib ib_send_bw -e
case_ send_bw_bidir ib ib_send_bw -b
case_ send_bw_srq ib ib_send_bw --use-srq -q 4
case_ send_bw_old ib ib_send_bw --use_old_post_send -s 64 -l 8
case_ send_bw_odp ib ib_send_bw --odp
case_ send_bw_roce roce ib_send_bw -x 0
case_ send_bw_ud_roce roce ib_send_bw -c UD -x 0
case_ read_bw_rc ib ib_read_bw
case_ read_bw_8 ib ib_read_bw -s 8
case_ read_bw_1m ib ib_read_bw -n 200 -s 1048576
case_ read_bw_q4 ib ib_read_bw -q 4
case_ read_bw_q16 ib ib_read_bw -q 16 -n 1000
case_ read_bw_list ib ib_read_bw -s 64 -l 8
case_ read_bw_event ib ib_read_bw -e
case_ read_bw_bidir ib ib_read_bw -b
case_ read_bw_odp ib ib_read_bw --odp
case_ read_bw_roce roce ib_read_bw -x 0
case_ atomic_bw_rc ib ib_atomic_bw
case_ atomic_bw_cmp ib ib_atomic_bw -A CMP_AND_SWAP
case_ atomic_bw_q4 ib ib_atomic_bw -q 4
case_ atomic_bw_list ib ib_atomic_bw -l 8
case_ atomic_bw_event ib ib_atomic_bw -e
case_ atomic_bw_roce roce ib_atomic_bw -x 0

# DC (DCIs sending to DCTs on an SRQ), with streams and without. perftest 4.5-0.17 posts
# stream ids 0, 1, 2, ... on a plain DCI too (its mask 0xffffffff >> (32 - 0)), which the
# model's plain DCI ignores (docs/model.md, "DCI streams"; docs/emulator.md).
case_ write_lat_dc ib ib_write_lat -c DC --log_dci_streams 1
case_ send_lat_dc ib ib_send_lat -c DC --log_dci_streams 1
case_ read_lat_dc ib ib_read_lat -c DC --log_dci_streams 1
case_ atomic_lat_dc ib ib_atomic_lat -c DC --log_dci_streams 1
case_ write_bw_dc ib ib_write_bw -c DC --log_dci_streams 1
case_ send_bw_dc ib ib_send_bw -c DC --log_dci_streams 1
case_ read_bw_dc ib ib_read_bw -c DC --log_dci_streams 1
case_ atomic_bw_dc ib ib_atomic_bw -c DC --log_dci_streams 1
case_ write_bw_dc_plain ib ib_write_bw -c DC

# XRC: each side's initiators reach the other's XRC SRQs through its targets (perftest's
# xrc_create_srq / ibv_open_xrcd with fd -1; docs/emulator.md, "XRC").
case_ send_lat_xrc ib ib_send_lat -c XRC
case_ write_lat_xrc ib ib_write_lat -c XRC
case_ read_lat_xrc ib ib_read_lat -c XRC
case_ send_bw_xrc ib ib_send_bw -c XRC
case_ write_bw_xrc ib ib_write_bw -c XRC
case_ read_bw_xrc ib ib_read_bw -c XRC
case_ send_bw_xrc_q4 ib ib_send_bw -c XRC -q 4

# rdma_cm: the test's QPs connected through it (-R; the client's connection goes through
# mlx5_0, the device of the address it names, as the kernel routes a local address), or only
# the exchange (-z, the QPs on -d); RC, READ and atomic depths, several QPs, UD (SIDR),
# RoCE.
case_ write_lat_cm ib ib_write_lat -R
case_ write_lat_cm_roce roce ib_write_lat -R
case_ send_lat_cm ib ib_send_lat -R
case_ read_lat_cm ib ib_read_lat -R
case_ atomic_lat_cm ib ib_atomic_lat -R
case_ write_bw_cm ib ib_write_bw -R
case_ write_bw_cm_q4 ib ib_write_bw -R -q 4
case_ send_bw_cm ib ib_send_bw -R
case_ send_bw_cm_roce roce ib_send_bw -R
case_ read_bw_cm ib ib_read_bw -R
case_ send_lat_ud_cm ib ib_send_lat -c UD -R
case_ send_bw_ud_cm ib ib_send_bw -c UD -R
case_ send_lat_ud_cm_roce roce ib_send_lat -c UD -R
case_ write_lat_z ib ib_write_lat -z
case_ write_lat_z_roce roce ib_write_lat -z
case_ send_bw_z ib ib_send_bw -z
case_ send_lat_ud_z ib ib_send_lat -c UD -z
case_ read_bw_z ib ib_read_bw -z

echo "perftest on mlx5-emu: $pass passed, $fail failed, $knowns known failures (logs in $logs)"
[ "$fail" -eq 0 ]
