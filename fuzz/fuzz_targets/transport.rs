// SPDX-License-Identifier: GPL-2.0

//! libFuzzer target `transport`: see `rpcrdma2_fuzz::check_transport`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rpcrdma2_fuzz::check_transport(data));
