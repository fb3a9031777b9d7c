// SPDX-License-Identifier: GPL-2.0

//! A bounded, coverage-less structured + mutational fuzzer for the codec
//! that runs on the stable toolchain (cargo-fuzz needs nightly).
//!
//! ```text
//! cargo run --release --example fuzz -- [--seconds N] [--seed S] [--iterations N]
//! ```
//!
//! Each iteration generates a valid message (every v1 and v2 header type,
//! or RFC 8797 private data), checks that it decodes to what was encoded,
//! then mutates the bytes (bit flips, boundary words, insertions, deletions,
//! truncation, splices) and feeds them to every decoder. Invariants:
//!
//! * no decoder panics (the release profile keeps overflow checks on, as
//!   the kernel does);
//! * an error's offset lies within the input;
//! * whatever decodes re-encodes to the identical header bytes (the formats
//!   are canonical), and its views iterate exactly `len()` items;
//! * `dispatch` and `decode` agree.
//!
//! On a violation it prints the seed, the iteration and the input in hex,
//! and exits with status 1.

#[path = "../tests/common/mod.rs"]
mod common;

use std::panic;
use std::process::exit;
use std::time::{Duration, Instant};

use common::*;
use rpcrdma_xdr::header::{Body, Dispatch, Protocol};
use rpcrdma_xdr::props::{PropSet, Property};
use rpcrdma_xdr::pvtdata::{self, Peer};
use rpcrdma_xdr::{decode, dispatch, v1, v2};

struct Args {
    seconds: u64,
    seed: u64,
    iterations: u64,
}

fn parse_args() -> Args {
    let mut a = Args {
        seconds: 20,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
        iterations: u64::MAX,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        let n = v.parse::<u64>().unwrap_or_else(|_| {
            eprintln!("usage: fuzz [--seconds N] [--seed S] [--iterations N]");
            exit(2)
        });
        match k.as_str() {
            "--seconds" => a.seconds = n,
            "--seed" => a.seed = n,
            "--iterations" => a.iterations = n,
            _ => {
                eprintln!("unknown argument {k}");
                exit(2)
            }
        }
    }
    a
}

/// A valid input of a random kind.
fn generate(r: &mut Rng) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 14];
    let n = match r.below(6) {
        0 | 1 => {
            let m = OwnedMsg::gen(r, 6);
            let n = m.encode(&mut buf).expect("generated header encodes");
            let payload = r.below(16)
                + if m.kind == rpcrdma_xdr::MsgKind::Msg {
                    4
                } else {
                    0
                };
            let payload = if m.kind == rpcrdma_xdr::MsgKind::Msg {
                payload
            } else {
                0
            };
            for b in &mut buf[n..n + payload] {
                *b = r.u64() as u8;
            }
            n + payload
        }
        2 => {
            let proto = if r.bool() { Protocol::V1 } else { Protocol::V2 };
            let e = gen_error_body(r, proto);
            match proto {
                Protocol::V1 => v1::encode_error(&mut buf, r.u32(), r.u32(), &e),
                Protocol::V2 => v2::encode_error(&mut buf, r.u32(), r.u32(), &e),
            }
            .expect("error encodes")
        }
        3 => {
            let owned: Vec<OwnedProp> = (0..r.below(8)).map(|_| OwnedProp::gen(r)).collect();
            let props: Vec<Property<'_>> = owned.iter().map(|p| p.as_prop()).collect();
            let p = v2::Prefix {
                xid: r.u32(),
                credit: r.u32(),
                flags: rpcrdma_xdr::Flags::NONE,
            };
            v2::encode_connprop(&mut buf, &p, &props).expect("connprop encodes")
        }
        4 => {
            // Linux's v1-framed answer to a v2 Call.
            let w = [r.u32(), 2, r.u32(), 4, 1, 1, 1];
            for (d, s) in buf.chunks_exact_mut(4).zip(w) {
                d.copy_from_slice(&s.to_be_bytes());
            }
            28
        }
        _ => {
            let p = gen_private_data(r);
            let at = r.below(24);
            for b in &mut buf[..at] {
                *b = r.u64() as u8;
            }
            p.encode(&mut buf[at..]).expect("pvtdata encodes");
            at + 8 + r.below(40)
        }
    };
    buf.truncate(n);
    buf
}

fn mutate(r: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + r.below(4) {
        let words = b.len() / 4;
        match r.below(9) {
            0 if !b.is_empty() => {
                let i = r.below(b.len());
                b[i] ^= 1 << r.below(8);
            }
            1 if words > 0 => {
                let i = r.below(words) * 4;
                b[i..i + 4].copy_from_slice(&r.interesting_u32().to_be_bytes());
            }
            2 => {
                let i = r.below(words + 1) * 4;
                let v = r.interesting_u32().to_be_bytes();
                b.splice(i..i, v);
            }
            3 if words > 0 => {
                let i = r.below(words) * 4;
                b.drain(i..i + 4);
            }
            4 if !b.is_empty() => {
                let n = r.below(b.len());
                b.truncate(n);
            }
            5 => {
                let n = r.below(9);
                let extra = r.bytes(n);
                b.extend(extra);
            }
            6 if words > 1 => {
                // Duplicate a run of words (lists of lists).
                let i = r.below(words) * 4;
                let n = (1 + r.below(6)).min(words - i / 4) * 4;
                let run: Vec<u8> = b[i..i + n].to_vec();
                b.splice(i..i, run);
            }
            7 if !b.is_empty() => {
                let i = r.below(b.len());
                b[i] = r.u64() as u8;
            }
            _ => {
                // Small integer in a random word: counts, discriminants.
                if words > 0 {
                    let i = r.below(words) * 4;
                    b[i..i + 4].copy_from_slice(&(r.below(8) as u32).to_be_bytes());
                }
            }
        }
    }
}

/// Checks every invariant on one input; returns a description of the first
/// violation.
fn check(input: &[u8], ok: &mut u64) -> Result<(), String> {
    let d = dispatch(input);
    let h = decode(input);
    match (&d, &h) {
        (Err(a), Err(b)) if a != b => return Err(format!("dispatch {a:?} but decode {b:?}")),
        (Err(a), Ok(_)) => return Err(format!("dispatch failed ({a:?}) but decode succeeded")),
        _ => {}
    }
    match h {
        Err(e) => {
            if e.offset > input.len() {
                return Err(format!("error offset beyond input: {e:?}"));
            }
            if !e.is_decode_error() {
                return Err(format!("decoder returned an encoder error: {e:?}"));
            }
            let _ = e.to_string();
        }
        Ok(h) => {
            *ok += 1;
            let expect_proto = match d {
                Ok(Dispatch::V1) | Ok(Dispatch::V1FramedErrVers) => Protocol::V1,
                Ok(Dispatch::V2) => Protocol::V2,
                Err(_) => unreachable!(),
            };
            if h.protocol != expect_proto {
                return Err(format!("dispatch {d:?} vs protocol {:?}", h.protocol));
            }
            if h.hdr_len > input.len() {
                return Err(format!("hdr_len {} beyond input", h.hdr_len));
            }
            match h.body {
                Body::Msg(m) => {
                    if h.hdr_len + m.payload.len() != input.len() {
                        return Err("payload does not end the input".into());
                    }
                    views_consistent(&m.chunks)?;
                }
                Body::NoMsg(m) => views_consistent(&m.chunks)?,
                Body::ConnProp(s) => {
                    if s.iter().count() != s.len() {
                        return Err("propset iterates a different count".into());
                    }
                    let _ = s.values();
                }
                Body::ConnPropPart(p) => {
                    let _ = PropSet::parse(p);
                }
                Body::Error(_) => {}
            }
            let mut out = vec![0u8; input.len() + 64];
            if let Some(n) = reencode(&h, &mut out) {
                let want = match h.body {
                    Body::Msg(_) => &input[..h.hdr_len],
                    _ => input,
                };
                // The v1-framed ERR_VERS keeps the peer's vers word (2); the
                // v1 encoder writes 1.
                let mut got = out[..n].to_vec();
                if d == Ok(Dispatch::V1FramedErrVers) {
                    got[4..8].copy_from_slice(&input[4..8]);
                }
                if got != want {
                    return Err(format!(
                        "re-encoding differs:\n  got  {}\n  want {}",
                        hex(&got),
                        hex(want)
                    ));
                }
            }
        }
    }
    // Private data: any buffer.
    match pvtdata::decode(input) {
        Peer::Valid(p) => {
            let b = p
                .to_bytes()
                .map_err(|e| format!("valid private data does not re-encode: {e}"))?;
            // Reserved bits are ignored, so compare everything else.
            let found = input
                .windows(8)
                .any(|w| w[..5] == b[..5] && w[6..] == b[6..] && (w[5] & 1) == (b[5] & 1));
            if !found {
                return Err(format!("private data {p:?} not in input"));
            }
        }
        Peer::Invalid(e) if e.offset > input.len() => return Err(format!("pvtdata offset: {e:?}")),
        _ => {}
    }
    Ok(())
}

fn views_consistent(c: &rpcrdma_xdr::ChunkListsView<'_>) -> Result<(), String> {
    if c.reads.iter().count() != c.reads.len() {
        return Err("read list count".into());
    }
    if c.reads.chunks().map(|k| k.len()).sum::<usize>() != c.reads.len() {
        return Err("read chunks do not cover the read list".into());
    }
    if c.reads.iter().any(|s| s.position % 4 != 0) {
        return Err("misaligned position accepted".into());
    }
    if c.writes.iter().count() != c.writes.len() {
        return Err("write list count".into());
    }
    for w in c.writes.iter().chain(c.reply) {
        if w.iter().count() != w.len() {
            return Err("write chunk count".into());
        }
        let _ = w.total_len();
    }
    Ok(())
}

fn main() {
    let args = parse_args();
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    println!(
        "fuzz: seed {} for {} s (reproduce with --seed {})",
        args.seed, args.seconds, args.seed
    );
    panic::set_hook(Box::new(|info| eprintln!("fuzz: PANIC: {info}")));
    let mut r = Rng::new(args.seed);
    let (mut iters, mut execs, mut decoded) = (0u64, 0u64, 0u64);
    while iters < args.iterations && (iters % 256 != 0 || Instant::now() < deadline) {
        iters += 1;
        let mut input = generate(&mut r);
        let mut fresh = 0u64;
        // The unmutated input must decode (except random-prefixed
        // private data, which is checked inside check()).
        let first = check(&input, &mut fresh);
        let mut failure = first.err().map(|e| (input.clone(), e));
        if failure.is_none() && fresh == 0 && dispatch(&input).is_ok() {
            failure = Some((
                input.clone(),
                "valid generated header did not decode".into(),
            ));
        }
        decoded += fresh;
        execs += 1;
        for _ in 0..8 {
            if failure.is_some() {
                break;
            }
            mutate(&mut r, &mut input);
            let res = panic::catch_unwind(|| {
                let mut n = 0;
                check(&input, &mut n).map(|()| n)
            });
            execs += 1;
            match res {
                Ok(Ok(n)) => decoded += n,
                Ok(Err(e)) => failure = Some((input.clone(), e)),
                Err(_) => failure = Some((input.clone(), "panic".into())),
            }
        }
        if let Some((bad, why)) = failure {
            eprintln!(
                "fuzz: FAILED at iteration {iters} (seed {}): {why}",
                args.seed
            );
            eprintln!("fuzz: input ({} bytes): {}", bad.len(), hex(&bad));
            exit(1);
        }
    }
    println!(
        "fuzz: {execs} executions ({iters} generated inputs), {decoded} decoded OK, 0 failures"
    );
}
