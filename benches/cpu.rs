//! CPU cost per operation against the null device (plain memory as the UAR, CQEs written
//! ahead): `cargo bench --bench cpu`. The cases and what is (not) timed are documented on
//! `mlx5_direct::null::CpuBench`; results are in `docs/benchmarks.md`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_direct::null::{CpuBench, CpuCase};

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu");
    group.throughput(Throughput::Elements(1));
    for case in CpuCase::ALL {
        let mut bench = CpuBench::new(case).expect("null device");
        group.bench_function(case.name(), |b| b.iter_custom(|iters| bench.run(iters)));
    }
    group.finish();
}

criterion_group!(benches, cpu);
criterion_main!(benches);
