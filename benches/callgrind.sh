#!/bin/sh
# Instructions per operation of each CPU-cost case, counted by callgrind over the timed
# chunks only: (Ir(N2) - Ir(N1)) / (N2 - N1). Usage: benches/callgrind.sh [N1 N2]
set -eu
n1=${1:-20000}
n2=${2:-40000}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --example cpu_ops
ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --toggle-collect='*CpuBench*timed_chunk*' "$target/release/examples/cpu_ops" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
for case in post_write8_inline_bf post_write8_inline_db post_write8_inline_batch32 \
    post_write8_inline_list32 poll_one_cqe poll_empty_cq; do
    a=$(ir "$case" "$n1")
    b=$(ir "$case" "$n2")
    echo "$case $(echo "scale=1; ($b - $a) / ($n2 - $n1)" | bc) instructions/op"
done
