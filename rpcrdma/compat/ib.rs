// SPDX-License-Identifier: GPL-2.0

//! ib_core types that differ between the kernel versions the module builds
//! for: `struct ib_device_attr`'s limits (`max_qp_wr`, `max_cqe`,
//! `max_send_sge`, ...) are `int` on 6.12 and `u32` on 7.3.

/// An `ib_device_attr` limit as the `i32` of 6.12; on 7.3 a `u32` above
/// `i32::MAX` saturates (no device's limit is that large).
#[inline]
pub fn attr_i32<T: TryInto<i32>>(v: T) -> i32 {
    v.try_into().unwrap_or(i32::MAX)
}

/// An `ib_device_attr` limit as a `u32`: on 6.12 a negative `int` is 0
/// (no device reports one); on 7.3 the `u32` as it is.
#[inline]
pub fn attr_u32<T: TryInto<u32>>(v: T) -> u32 {
    v.try_into().unwrap_or(0)
}
