#!/usr/bin/env bash
# The crate's hardware test bodies on the emulated ConnectX (docs/emulator.md): the `verbs`
# backend through rdma-sys, Debian's libibverbs and libmlx5, mlx5dv_init_obj and the crate's
# own WQEs, doorbells and CQE parsing, on model NICs, with MLX5_DIRECT_DEVICE=mlx5_0.
#
#   hw/emu/verbs-hw.sh [--release] [--perf]
#
# Runs, each under `mlx5-emu run` on a fabric of its own:
#   - tests/verbs_hw.rs, every `--ignored` body, rdma_cm_connects_driver_qps with
#     MLX5_DIRECT_CM_ADDR=10.47.0.1:7471 (mlx5_0's address on the emulator's rdma_cm), and
#     on a RoCE fabric that one again and ud_multicast_reaches_attached_qps from GID index 2
#     (the IPv4 RoCE v2 GID: an IPv4 group), and the raw Ethernet bodies (raw packet QPs,
#     steering rules, a striding work queue behind an RSS QP, a rate limit: an Ethernet
#     port), which the InfiniBand run skips;
#   - tests/verbs_open.rs (the typed errors of opening a device, on a host with devices);
#   - with --perf, perf/tests/perf_options.rs's use_dm_runs_on_hardware (mlx5-perf --use-dm as
#     server and client). Slow in a debug build (about two minutes; 5 s in release): every
#     store to device memory is trapped, and the debug build's code between the stores of one
#     line runs single-stepped. CI leaves it out.
#
# Builds the test binaries with the features CI's all-features test step builds them with
# (so CI builds nothing twice), and the emulator and its preload in the same profile. Exits
# non-zero if any test fails; prints the fabric's server log when one does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

profile=debug
release=()
perf=0
for arg in "$@"; do
    case $arg in
    --release) profile=release release=(--release) ;;
    --perf) perf=1 ;;
    *)
        echo "usage: $0 [--release] [--perf]" >&2
        exit 2
        ;;
    esac
done

# The executable of test target $1 in cargo's JSON messages on stdin.
test_binary() {
    grep "\"kind\":\[\"test\"\]" | grep "\"name\":\"$1\"" |
        grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n 1
}

cargo build "${release[@]}" -p mlx5-emu -p mlx5-emu-preload
json=$(cargo test "${release[@]}" --all-features --no-run --message-format=json \
    --test verbs_hw --test verbs_open)
verbs_hw=$(test_binary verbs_hw <<<"$json")
verbs_open=$(test_binary verbs_open <<<"$json")
if ((perf)); then
    perf_options=$(cargo test "${release[@]}" -p mlx5-perf --all-features --no-run \
        --message-format=json --test perf_options | test_binary perf_options)
fi
emu=target/$profile/mlx5-emu

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=()

# Runs test binary $3 with arguments $4... on fabric $1 with link $2 (ib or roce); a failure
# is noted, with its log.
on_emulator() {
    local fabric=$1 link=$2
    shift 2
    printf '\n--- %s on fabric %s (%s)\n' "${1##*/}" "$fabric" "$link"
    if ! MLX5_EMU_DIR=$dir MLX5_DIRECT_DEVICE=mlx5_0 MLX5_DIRECT_CM_ADDR=10.47.0.1:7471 \
        timeout 600 "$emu" run --fabric "$fabric" --link "$link" -- "$@"; then
        failed+=("$fabric")
        echo "--- server log of fabric $fabric:"
        cat "$dir/$fabric.log" 2>/dev/null || true
    fi
}

# The raw Ethernet bodies need an Ethernet port: on the RoCE fabric only.
raw=(a_raw_sniffer_sees_a_sent_frame_with_its_checksums a_raw_striding_queue_takes_frames_in_place
    a_raw_rss_qp_spreads_flows_by_hash a_raw_qp_takes_a_rate_limit)
skip_raw=()
for t in "${raw[@]}"; do skip_raw+=(--skip "$t"); done
on_emulator verbs-hw ib "$verbs_hw" --ignored --test-threads 1 "${skip_raw[@]}"
on_emulator verbs-hw-roce roce "$verbs_hw" --ignored --exact rdma_cm_connects_driver_qps
on_emulator verbs-hw-raw roce "$verbs_hw" --ignored --test-threads 1 --exact "${raw[@]}"
MLX5_DIRECT_GID_INDEX=2 on_emulator verbs-hw-roce-mcast roce "$verbs_hw" --ignored --exact \
    ud_multicast_reaches_attached_qps
on_emulator verbs-open ib "$verbs_open" --test-threads 1
if ((perf)); then
    on_emulator perf-options ib "$perf_options" --ignored --exact use_dm_runs_on_hardware
fi

if ((${#failed[@]})); then
    echo "verbs-hw: failed on the emulator: ${failed[*]}" >&2
    exit 1
fi
echo "verbs-hw: every hardware body run passed on the emulator"
