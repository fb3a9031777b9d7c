// SPDX-License-Identifier: GPL-2.0

//! libFuzzer target `pvtdata`: see `rpcrdma2_fuzz::check_pvtdata`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rpcrdma2_fuzz::check_pvtdata(data));
