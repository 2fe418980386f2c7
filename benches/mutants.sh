#!/usr/bin/env bash
# Mutation testing of the data path with cargo-mutants (27.1: `cargo install --locked
# cargo-mutants --version '~27.1'`): each mutant is one small change to an operator, a
# match arm or a return value; the tests that exercise its file must fail on it. A mutant
# they miss is a real gap unless benches/mutants-equivalent.txt lists it, with the reason
# it cannot change behaviour. See docs/testing.md, "Mutation testing".
#
# Usage: benches/mutants.sh [FILE...]
#   FILE  a data-path source file (src/cqz.rs, src/prm/ctrl.rs, hw/src/wqe.rs, ...) or a
#         directory of them (src/prm); none: every file of the data path.
# Environment:
#   MUTANTS_JOBS=N        cargo-mutants jobs (default 1; each builds the package)
#   MUTANTS_BASELINE=skip skip the unmutated run (only when the tests are known to pass);
#                         the test time limit is then MUTANTS_TIMEOUT seconds (default 90),
#                         else cargo-mutants derives it from the unmutated run
#   MUTANTS_OUT=DIR       where cargo-mutants writes (default target/mutants)
#   MUTANTS_JUDGE_ONLY=1  run nothing: judge the last run's output again (after editing
#                         the list of equivalents)
#   CARGO_PROFILE_DEV_DEBUG  default 0 here: test builds without debug info link
#                         several times faster (a model mutant built in 4 s instead of
#                         11 s on 2 cores); the first mutant of a file then builds the
#                         dependencies once more, unless target/ holds them that way
#
# Prints one line per file: mutants, caught (timeouts included), equivalent (listed and
# missed), missed (not listed), unviable; fails if any file has a missed mutant, and warns
# about listed mutants that are now caught (the list is stale: remove them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

equivalents=benches/mutants-equivalent.txt
out_root=${MUTANTS_OUT:-target/mutants}
jobs=${MUTANTS_JOBS:-1}
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-0}
baseline=${MUTANTS_BASELINE:-run}

# The files of the data path, in the order a full run takes them.
data_path=(
    src/prm/ctrl.rs src/prm/seg.rs src/prm/cqe.rs src/prm/zip.rs src/prm/dbrec.rs
    src/prm/endian.rs src/prm/wire.rs src/prm/mod.rs
    src/cqz.rs src/cq/parse.rs src/cq/completion.rs src/cq/mod.rs
    src/sq src/rq.rs src/mmio.rs src/ring.rs src/sizing.rs
    hw/src/wqe.rs hw/src/cqe.rs hw/src/cqz.rs hw/src/complete.rs hw/src/sq.rs
    hw/src/req.rs hw/src/resp.rs hw/src/xfer.rs
)

# The package a file belongs to and the test targets that exercise it (cargo arguments:
# they select what is built and run for every mutant, so they are kept to the tests that
# matter; the unit tests of the file's crate always run).
package_of() {
    case $1 in
    hw/src/*) echo mlx5-hw ;;
    src/*) echo mlx5-direct ;;
    *) return 1 ;;
    esac
}
tests_of() {
    case $1 in
    src/cqz.rs) echo --lib --test cqz ;;
    src/cq/completion.rs) echo --features serde --lib --test wire --test cqz --test sim_ud \
        --test scatter_cqe ;;
    src/cq/*) echo --lib --test cqz --test hostile_cqes --test sim_errors --test sim_ops \
        --test odp --test scatter_cqe --test timestamps --test sim_ud --test sim_dc_pool ;;
    src/prm/zip.rs) echo --lib --test golden --test cqz ;;
    src/prm/cqe.rs) echo --lib --test golden --test null_device --test hostile_cqes ;;
    src/prm/*) echo --lib --test golden --test null_device ;;
    src/sq/eth.rs) echo --lib --test golden --test sim_raw --test sim_pacing ;;
    src/sq/empw.rs) echo --lib --test golden --test sim_raw_empw ;;
    src/sq/xrc.rs) echo --lib --test sim_xrc ;;
    src/sq/*) echo --lib --test null_device --test golden --test sim_matrix --test sim_dc \
        --test sim_ud --test dm ;;
    src/rq.rs) echo --lib --test sim_ops --test scatter_cqe --test odp --test sim_ud \
        --test sim_matrix --test faults --test hostile ;;
    src/mmio.rs) echo --lib --test null_device --test sim_pcie ;;
    src/ring.rs) echo --lib --test null_device --test cqz --test sim_matrix --test scatter_cqe ;;
    src/sizing.rs) echo --lib --test sim_rc --test null_device --test verbs_layout ;;
    hw/src/*) echo --lib --tests ;;
    *) return 1 ;;
    esac
}

# The number of lines of the cargo-mutants list `$1` in `$dir`.
count() { grep -c . "$dir/$1.txt" || true; }

# The listed equivalents of `file`: the mutant names (as cargo-mutants prints them), one a
# line, from the lines `<name>  ## <reason>` of the list.
listed() {
    grep -v '^#' "$equivalents" | grep -F -- "$1:" | sed 's/  ## .*//' | sort -u || true
}

# Runs cargo-mutants on `$file` of `$package` with the cargo arguments `$tests`, into
# `$out`.
run_mutants() {
    rm -rf "$out"
    mkdir -p "$out"
    local cargo_args=() timeout=() a rc
    for a in $tests; do cargo_args+=("--cargo-arg=$a"); done
    [[ $baseline != skip ]] || timeout=(--timeout "${MUTANTS_TIMEOUT:-90}")
    echo "==> $file ($package: $tests)"
    # Exit status 2 (missed mutants) and 3 (timeouts) are judged below.
    cargo mutants --file "$file" --package "$package" --baseline="$baseline" \
        --copy-target=true --jobs "$jobs" "${timeout[@]}" --output "$out" \
        "${cargo_args[@]}" || {
        rc=$?
        [[ $rc == 2 || $rc == 3 ]]
    }
}

# The whole run in one function: bash reads it before running any of it, so editing this
# file (or the list of equivalents) during a run is safe.
main() {
    args=("$@")
    ((${#args[@]})) || args=("${data_path[@]}")
    files=()
    for arg in "${args[@]}"; do
        arg=${arg%/}
        if [[ -d $arg ]]; then
            while IFS= read -r f; do files+=("$f"); done < <(find "$arg" -name '*.rs' | sort)
        else
            files+=("$arg")
        fi
    done

    status=0
    rows=()
    for file in "${files[@]}"; do
        [[ -f $file ]] || {
            echo "no such file: $file" >&2
            exit 2
        }
        package=$(package_of "$file") && tests=$(tests_of "$file") || {
            echo "not a data-path file this script knows: $file" >&2
            exit 2
        }
        out=$out_root/${file//\//_}
        dir=$out/mutants.out
        if [[ ${MUTANTS_JUDGE_ONLY:-} == 1 ]]; then
            [[ -d $dir ]] || {
                echo "no earlier run of $file in $out" >&2
                exit 2
            }
        else
            run_mutants
        fi
        caught=$(($(count caught) + $(count timeout)))
        unviable=$(count unviable)
        missed_all=$(sort -u "$dir/missed.txt")
        known=$(listed "$file")
        equivalent=$(comm -12 <(echo "$missed_all") <(echo "$known") | grep -c . || true)
        real=$(comm -23 <(echo "$missed_all") <(echo "$known") | grep . || true)
        stale=$(comm -13 <(echo "$missed_all") <(echo "$known") | grep . || true)
        missed=$(echo -n "$real" | grep -c . || true)
        total=$((caught + unviable + $(echo -n "$missed_all" | grep -c . || true)))
        rows+=("$(printf '| `%s` | %d | %d | %d | %d | %d |' "$file" "$total" "$caught" \
            "$equivalent" "$missed" "$unviable")")
        if [[ -n $real ]]; then
            status=1
            echo "missed, not listed as equivalent:"
            echo "$real" | sed 's/^/    /'
        fi
        if [[ -n $stale ]]; then
            echo "listed as equivalent but not missed (caught now, or gone): remove from $equivalents:"
            echo "$stale" | sed 's/^/    /'
        fi
    done

    echo
    echo '| file | mutants | caught | equivalent | missed | unviable |'
    echo '|---|---|---|---|---|---|'
    printf '%s\n' "${rows[@]}"
    return $status
}

main "$@"; exit
