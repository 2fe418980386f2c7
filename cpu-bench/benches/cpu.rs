//! CPU cost per operation against the null device, in nanoseconds:
//! `cargo bench -p mlx5-cpu-bench`. The cases are `mlx5_cpu_bench::Case`; results are in
//! `docs/benchmarks.md`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_cpu_bench::{Bench, Case};

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu");
    group.throughput(Throughput::Elements(1));
    for case in Case::ALL {
        let mut bench = Bench::new(case).expect("null device");
        group.bench_function(case.name(), |b| b.iter_custom(|iters| bench.run(iters)));
    }
    group.finish();
}

criterion_group!(benches, cpu);
criterion_main!(benches);
