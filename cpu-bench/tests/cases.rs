//! Every case does what it says, over more than one chunk (`Bench::run` itself panics when
//! an operation does not behave as the case expects).

use mlx5_cpu_bench::{Bench, Case, Wr};
use mlx5_direct::null::CpuCase;

#[test]
fn every_case_runs_its_operations() {
    for case in Case::ALL {
        let mut bench = Bench::new(case).unwrap();
        // (WQEs posted, CQEs polled) after each of two runs of 600 operations. The second
        // starts from a ring that the first run's last, partial chunk left part outstanding
        // (`mlx5-perf cpu` runs the same bench several times).
        let expected: [(u32, u32); 2] = match case.op {
            // 600 one-WQEBB WRITEs a run; one CQE polled before each chunk but the very
            // first (the second run's first completes the 88 left outstanding).
            CpuCase::WriteInlineBf
            | CpuCase::WriteInlineDb
            | CpuCase::WriteBatch32
            | CpuCase::WriteList32 => [(600, 2), (1200, 5)],
            // Three chunks of NOPs (256, 256, 256) posted, 600 of their CQEs polled; then 88
            // refill the ring, 256, 256 (the zipped case's CQEs in blocks of 64, the 88 as
            // 64 and 24).
            CpuCase::PollOne | CpuCase::PollZipped => [(768, 600), (1368, 1200)],
            CpuCase::PollEmpty => [(0, 0), (0, 0)],
        };
        for counts in expected {
            bench.run(600);
            let q = bench.queues();
            let got = (q.sq.producer_count(), q.cq.consumer_index());
            assert_eq!(got, counts, "{case:?}");
        }
        assert_eq!(Case::from_name(&case.name()), Some(case));
    }
}

/// The constant, the run-time, the prepared and the typed WRITE put the same bytes in the
/// ring.
#[test]
fn constant_and_runtime_writes_build_the_same_wqe() {
    let wqe = |wr| {
        let mut bench = Bench::new(Case {
            op: CpuCase::WriteInlineBf,
            wr,
        })
        .unwrap();
        bench.run(3);
        bench.queues().sq.wqe_bytes(2, 64)
    };
    let constant = wqe(Wr::Const);
    assert_eq!(constant, wqe(Wr::Runtime));
    assert_eq!(constant, wqe(Wr::Prepared));
    assert_eq!(constant, wqe(Wr::Typed));
    // WRITE (0x08), WQE index 2, QPN 0x1234, 3 DS, CQ update, remote 0x1000 / 0x100,
    // 8 inline bytes.
    assert_eq!(constant[..8], [0, 0, 2, 0x08, 0, 0x12, 0x34, 3]);
    assert_eq!(constant[11], 0x08);
    assert_eq!(
        constant[16..32],
        [0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        constant[32..44],
        [0x80, 0, 0, 8, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a]
    );
}
