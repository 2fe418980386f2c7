//! The hostile suites' deterministic input: splitmix64 (a tiny, well-known generator,
//! enough for test input) and the seeds to run.

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Seeds to run: `HOSTILE_SEED` alone, or `count` seeds from 1.
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("HOSTILE_SEED") {
        Ok(s) => vec![s.parse().expect("HOSTILE_SEED is a number")],
        Err(_) => (1..=count).collect(),
    }
}
