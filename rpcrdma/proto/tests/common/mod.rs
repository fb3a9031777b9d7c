// SPDX-License-Identifier: GPL-2.0

//! Shared by the integration tests: a small deterministic generator
//! (SplitMix64), seeded by the test so that a failure reproduces. Each
//! test adds the draws it needs in its own `impl Rng` block.

/// SplitMix64 state.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
