//! Every case does what it says, over more than one chunk (`Bench::run` itself panics when
//! an operation does not behave as the case expects).

use mlx5_cpu_bench::{Bench, Case, Wr};
use mlx5_direct::null::CpuCase;

#[test]
fn every_case_runs_its_operations() {
    for case in Case::ALL {
        let mut bench = Bench::new(case).unwrap();
        bench.run(600);
        let q = bench.queues();
        let (posted, polled) = (q.sq.producer_count(), q.cq.consumer_index());
        match case.op {
            // 600 one-WQEBB WRITEs; one CQE polled per full ring (before chunks 2, 3).
            CpuCase::WriteInlineBf
            | CpuCase::WriteInlineDb
            | CpuCase::WriteBatch32
            | CpuCase::WriteList32 => assert_eq!((posted, polled), (600, 2), "{case:?}"),
            // Three chunks of NOPs (256, 256, 256) posted, 600 of their CQEs polled.
            // The same NOPs, their CQEs written as blocks of 64.
            CpuCase::PollOne | CpuCase::PollZipped => {
                assert_eq!((posted, polled), (768, 600), "{case:?}")
            }
            CpuCase::PollEmpty => assert_eq!((posted, polled), (0, 0)),
        }
        assert_eq!(Case::from_name(&case.name()), Some(case));
        // A second run starts from a ring that the last, partial chunk left part outstanding
        // (`mlx5-perf cpu` runs the same bench several times).
        bench.run(600);
        let q = bench.queues();
        let (posted, polled) = (q.sq.producer_count(), q.cq.consumer_index());
        match case.op {
            // One CQE polled before each chunk: the first completes the 88 left outstanding.
            CpuCase::WriteInlineBf
            | CpuCase::WriteInlineDb
            | CpuCase::WriteBatch32
            | CpuCase::WriteList32 => assert_eq!((posted, polled), (1200, 5), "{case:?}"),
            // 88 NOPs refill the ring (the zipped case in blocks of 64 and 24), then 256, 256.
            CpuCase::PollOne | CpuCase::PollZipped => {
                assert_eq!((posted, polled), (1368, 1200), "{case:?}")
            }
            CpuCase::PollEmpty => assert_eq!((posted, polled), (0, 0)),
        }
    }
}

/// The constant, the run-time and the prepared WRITE put the same bytes in the ring.
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
