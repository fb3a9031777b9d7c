// SPDX-License-Identifier: GPL-2.0

//! libFuzzer target `header`: see `rpcrdma2_fuzz::check_header`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rpcrdma2_fuzz::check_header(data));
