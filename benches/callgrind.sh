#!/bin/sh
# Instructions per operation of each CPU-cost case, counted by callgrind over the timed
# chunks only: (Ir(N2) - Ir(N1)) / (N2 - N1). The timed loops are the `cpu-bench` package's
# (a crate of its own, as an application uses the library).
#
# Usage: benches/callgrind.sh [--lto] [--check] [N1 N2]
#   --lto    build with the `release-lto` profile (fat LTO) instead of `release`
#   --check  compare with the figures in docs/benchmarks.md (the table between the
#            `cpu-figures` markers) and fail if a case costs more than 10 % above its figure
set -eu
cd "$(dirname "$0")/.."
profile=release
check=
while [ $# -gt 0 ]; do
    case $1 in
    --lto) profile=release-lto ;;
    --check) check=1 ;;
    *) break ;;
    esac
    shift
done
n1=${1:-20000}
n2=${2:-40000}
target=${CARGO_TARGET_DIR:-target}
cargo build --quiet --profile "$profile" -p mlx5-cpu-bench --bin cpu_ops
bin=$target/$profile/cpu_ops
ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --toggle-collect='*timed_chunk*' "$bin" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
# The documented figure of a case: `| `case` | figure |` rows between the markers.
figure() {
    sed -n '/<!-- cpu-figures -->/,/<!-- \/cpu-figures -->/p' docs/benchmarks.md |
        sed -n "s/^| \`$1\` | \([0-9.]*\) |.*/\1/p"
}
failed=0
for case in $("$bin" --list); do
    a=$(ir "$case" "$n1")
    b=$(ir "$case" "$n2")
    per=$(echo "scale=1; ($b - $a) / ($n2 - $n1)" | bc)
    line="$case $per instructions/op"
    if [ -n "$check" ]; then
        doc=$(figure "$case")
        if [ -z "$doc" ]; then
            echo "$line: no figure in docs/benchmarks.md"
            failed=1
            continue
        fi
        if [ "$(echo "$per * 10 > $doc * 11" | bc)" -eq 1 ]; then
            echo "$line: REGRESSION, more than 10 % above the documented $doc"
            failed=1
            continue
        fi
        line="$line (documented $doc)"
    fi
    echo "$line"
done
exit $failed
