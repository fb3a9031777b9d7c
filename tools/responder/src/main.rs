// SPDX-License-Identifier: GPL-2.0

//! `rpcrdma-responder`: an RPC-over-RDMA version 2 (-00) and version 1
//! responder that forwards every RPC Call to nfsd over TCP.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use rpcrdma_responder::malform::Kind;
use rpcrdma_responder::manpage;
use rpcrdma_responder::proto::call::CallKind;
use rpcrdma_responder::proto::{CreditWord, GrantMode, Options};
use rpcrdma_responder::server::{Config, Server};

const USAGE: &str = "\
usage: rpcrdma-responder [options]

Listens with RDMA-CM, speaks RPC-over-RDMA version 2
(draft-ietf-nfsv4-rpcrdma-version-two-00) and version 1 (RFC 8166), and
forwards each RPC Call to nfsd over TCP with record marking.

options:
  --port N               RDMA-CM port (default 20050)
  --nfsd ADDR:PORT       nfsd's TCP address (default 127.0.0.1:2049)
  --stats FILE           write counters to FILE (every 0.5 s when changed,
                         on SIGUSR1 and on exit)
  --credits N            credit limit advertised (default 32)
  --inline N             our Receive buffer size / inline threshold (default 4096)
  -v, --verbose          log every message received and every reply planned
  --v1-only              speak only version 1; answer version 2 with ERR_VERS
                         in version 1 layout carrying the Call's version word
                         (what Linux svcrdma does)
  --relay-callbacks      relay nfsd's callbacks (NFSv4.x) to the client as
                         reverse-direction Calls and its replies back to nfsd
                         (default: count and drop them)
  --probe-callbacks      with --relay-callbacks: when nfsd gives a session
                         its backchannel on a connection (CREATE_SESSION,
                         BIND_CONN_TO_SESSION), send the client a CB_NULL
                         of our own and count its reply (nfsd sends none
                         for NFSv4.1 and later)
  --bad-reverse-call     v2, with --relay-callbacks: after the first reply on
                         a connection, send the client once a reverse-direction
                         Call it cannot serve (a CB_NULL offering a Write
                         chunk) and count its RDMA2_ERROR answer
                         (bad_reverse_call_answered: RDMA2_ERR_REPLY_RESOURCE
                         with F_RESPONSE, -00 §6.4.3; else
                         bad_reverse_call_wrong)
  --unknown-htype-call   v2, with --relay-callbacks: once per connection,
                         ahead of the reply to its second Call, send the
                         client a message of header type 7 without
                         F_RESPONSE carrying that Call's XID, and count its
                         answer (unknown_htype_answered: RDMA2_ERROR
                         RDMA2_ERR_INVAL_HTYPE with F_RESPONSE, -00 §6.4.3;
                         else unknown_htype_wrong)
  --continued-reverse-call
                         v2, with --relay-callbacks: when nfsd gives a
                         session its backchannel, send the client once a
                         CB_NULL reverse-direction Call continued over two
                         pieces and count its answer
                         (continued_reverse_call_answered: a successful
                         reply with F_RESPONSE; else
                         continued_reverse_call_wrong)
  --pad-callbacks N      with --relay-callbacks: append N CB_NOTIFY_LOCK
                         operations with an empty lock owner (which the
                         Linux client answers NFS4_OK, with no effect) to
                         every CB_COMPOUND relayed from nfsd, so that the
                         client's reply grows by 8 bytes each (above the
                         inline threshold it comes continued, -00 §6.5);
                         their results are taken off before the reply
                         goes to nfsd (padded_replies_stripped; else
                         padded_replies_wrong)
  --prop-segs N          v2: advertise Maximum RDMA Segment Count N in our
                         CONNPROP (default 16) and answer RDMA2_ERR_SEGMENTS
                         to Calls carrying more segments (counted in
                         prop_violations)
  --prop-seg-size B      v2: advertise Maximum RDMA Segment Size B (default
                         1 MiB) and refuse Calls with a longer segment alike
  --remote-invalidate    set the R bit in our RFC 8797 private data; only
                         when the client sets it too are replies sent with
                         Send With Invalidate (default: plain Sends)
fault injection:
  --no-connprop          do not send RDMA2_CONNPROP
  --connprop-pieces N    v2: send RDMA2_CONNPROP continued (F_MORE) over N
                         messages (1-64)
  --connprop-twice       v2: after our RDMA2_CONNPROP send a second one with
                         Maximum Send Size and Receive Buffer Size 1024
                         (the client must keep the first, -00 §6.4.4)
  --no-private-data      accept without RFC 8797 private data
  --continue-over N      v2: continue (F_MORE) every reply longer than N bytes,
                         in pieces of at most N bytes
  --tiny-pieces          v2: the first three pieces of every continued reply
                         carry 1, 2 and 3 bytes of payload (-00 §4.5.2:
                         any convenient boundary)
  --credit-word READING  v2: the reading of -00 §4.3.1 our credit words
                         follow: ours (default: high half the limit, low
                         half the credits returned), total (the low half is
                         the grant itself, never zero, the high half the
                         same), total-zero-max (the grant in the low half,
                         a zero high half)
  --grant MODE           v2: how the client's credits are returned: prompt
                         (default: every message returns all it owes),
                         exact (every message returns exactly one; each
                         other credit owed by an asynchronous grant of its
                         own), lazy (answers return one; the rest by one
                         asynchronous grant once 4 have accumulated); in
                         every mode what is owed goes in a grant ahead of
                         messages waiting for the client's credits
  --err-nth N:CODE       answer the Nth Call of each connection with
                         RDMA2_ERR_* CODE (1-10, or any number; v1: ERR_VERS
                         for 1, else ERR_CHUNK); may be repeated
  --err-every START:N:CODE
                         after the first START Calls of each connection,
                         answer every Nth Call with CODE (as --err-nth).
                         The error bodies describe the Call (READ_CHUNKS:
                         max 0; SEGMENTS: one fewer than its largest chunk;
                         WRITE_RESOURCE: 4 bytes more than its Write chunk;
                         REPLY_RESOURCE (9) to a Call without a Reply chunk
                         is sent once nfsd has answered, with the length of
                         the reply). The stats count each refused XID the
                         client sends again: refused_resent after an error
                         that must fail the RPC, resent_<code> when the Call
                         changed as -00 asks, resent_noncompliant otherwise
  --err-calls KIND       the Calls --err-nth and --err-every count: any
                         (default), read / write / reply (with Read chunks,
                         Write chunks, a Reply chunk), inline (no chunks)
  --refuse-read-chunks   v2: answer RDMA2_ERR_READ_CHUNKS (max 0) to Calls
                         with Read chunks at a non-zero position
  --no-write-chunks      v2: answer RDMA2_ERR_REPLY_RESOURCE (with the reply's
                         length, once nfsd has answered) to Calls with Write
                         chunks
  --max-segs N           v2: answer RDMA2_ERR_SEGMENTS (N) to Calls with a
                         chunk of more than N segments
  --drop-nth N           never send the Nth reply of each connection
  --delay-nth N:MS       send the Nth reply MS milliseconds late
  --disconnect-after N   disconnect after N received messages
  --malform-nth N:KIND   replace the Nth reply of each connection by a
                         malformed message (--list-malformed shows the
                         kinds; those that rewrite chunk lists take the
                         first reply from the Nth on that uses RDMA Write)
  --list-malformed       print the catalogue of malformed messages
  -h, --help             this text
  --man                  this text as a manual page (roff)
";

fn num<T: std::str::FromStr>(s: Option<String>, what: &str) -> Result<T, String> {
    s.ok_or(format!("{what} needs a value"))?
        .parse()
        .map_err(|_| format!("{what}: not a number"))
}

fn pair(s: Option<String>, what: &str) -> Result<(u64, String), String> {
    let s = s.ok_or(format!("{what} needs N:VALUE"))?;
    let (a, b) = s.split_once(':').ok_or(format!("{what} needs N:VALUE"))?;
    Ok((
        a.parse().map_err(|_| format!("{what}: bad N"))?,
        b.to_string(),
    ))
}

fn parse() -> Result<Option<Config>, String> {
    let mut cfg = Config {
        port: 20050,
        nfsd: "127.0.0.1:2049".parse().map_err(|_| "addr")?,
        opts: Options::default(),
        stats_file: None,
        no_private_data: false,
        disconnect_after: None,
        drop_nth: None,
        delay_nth: None,
        malform_nth: None,
        verbose: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(None);
            }
            "--man" => {
                print!(
                    "{}",
                    manpage::render("rpcrdma-responder", env!("CARGO_PKG_VERSION"), USAGE)
                );
                return Ok(None);
            }
            "--list-malformed" => {
                for (_, name, doc) in Kind::ALL {
                    println!("{name:22} {doc}");
                }
                return Ok(None);
            }
            "--port" => cfg.port = num(args.next(), &a)?,
            "--nfsd" => {
                cfg.nfsd = args
                    .next()
                    .ok_or("--nfsd needs ADDR:PORT")?
                    .parse()
                    .map_err(|_| "--nfsd: bad address")?
            }
            "--stats" => cfg.stats_file = args.next(),
            "--credits" => cfg.opts.credits = num::<u16>(args.next(), &a)?.max(1),
            "--inline" => cfg.opts.recv_size = num::<u32>(args.next(), &a)?.clamp(1024, 65536),
            "--v1-only" => cfg.opts.v1_only = true,
            "-v" | "--verbose" => cfg.verbose = true,
            "--no-connprop" => cfg.opts.no_connprop = true,
            "--connprop-twice" => cfg.opts.connprop_twice = true,
            "--connprop-pieces" => {
                cfg.opts.connprop_pieces = num::<usize>(args.next(), &a)?.clamp(1, 64)
            }
            "--relay-callbacks" => cfg.opts.relay_callbacks = true,
            "--refuse-read-chunks" => cfg.opts.refuse_read_chunks = true,
            "--err-calls" => {
                let k = args.next().ok_or("--err-calls needs KIND")?;
                cfg.opts.err_calls =
                    CallKind::parse(&k).ok_or(format!("--err-calls: unknown kind {k}"))?;
            }
            "--no-write-chunks" => cfg.opts.no_write_chunks = true,
            "--max-segs" => cfg.opts.max_segs = Some(num(args.next(), &a)?),
            "--probe-callbacks" => cfg.opts.probe_callbacks = true,
            "--bad-reverse-call" => cfg.opts.bad_reverse_call = true,
            "--unknown-htype-call" => cfg.opts.unknown_htype_call = true,
            "--continued-reverse-call" => cfg.opts.continued_reverse_call = true,
            "--pad-callbacks" => cfg.opts.pad_callbacks = num(args.next(), &a)?,
            "--prop-segs" => cfg.opts.prop_segs = Some(num(args.next(), &a)?),
            "--prop-seg-size" => cfg.opts.prop_seg_size = Some(num(args.next(), &a)?),
            "--no-private-data" => cfg.no_private_data = true,
            "--remote-invalidate" => cfg.opts.remote_invalidate = true,
            "--tiny-pieces" => cfg.opts.tiny_pieces = true,
            "--continue-over" => cfg.opts.continue_over = Some(num(args.next(), &a)?),
            "--credit-word" => {
                let m = args
                    .next()
                    .ok_or("--credit-word needs ours, total or total-zero-max")?;
                cfg.opts.credit_word = CreditWord::parse(&m).ok_or(format!(
                    "--credit-word: unknown reading {m} (ours, total, total-zero-max)"
                ))?;
            }
            "--grant" => {
                let m = args.next().ok_or("--grant needs prompt, exact or lazy")?;
                cfg.opts.grant = GrantMode::parse(&m)
                    .ok_or(format!("--grant: unknown mode {m} (prompt, exact, lazy)"))?;
            }
            "--err-nth" => {
                let (n, c) = pair(args.next(), &a)?;
                let code = c.parse().map_err(|_| "--err-nth: bad CODE")?;
                cfg.opts.err_nth.push((n, code));
            }
            "--err-every" => {
                let s = args.next().ok_or("--err-every needs START:N:CODE")?;
                let v: Vec<&str> = s.split(':').collect();
                let [start, n, code] = v[..] else {
                    return Err("--err-every needs START:N:CODE".into());
                };
                let bad = |w: &str| format!("--err-every: bad {w}");
                let n: u64 = n.parse().map_err(|_| bad("N"))?;
                if n == 0 {
                    return Err(bad("N (0)"));
                }
                cfg.opts.err_every = Some((
                    start.parse().map_err(|_| bad("START"))?,
                    n,
                    code.parse().map_err(|_| bad("CODE"))?,
                ));
            }
            "--drop-nth" => cfg.drop_nth = Some(num(args.next(), &a)?),
            "--delay-nth" => {
                let (n, ms) = pair(args.next(), &a)?;
                cfg.delay_nth = Some((n, ms.parse().map_err(|_| "--delay-nth: bad MS")?));
            }
            "--disconnect-after" => cfg.disconnect_after = Some(num(args.next(), &a)?),
            "--malform-nth" => {
                let (n, k) = pair(args.next(), &a)?;
                let k = Kind::parse(&k).ok_or(format!("--malform-nth: unknown kind {k}"))?;
                cfg.malform_nth = Some((n, k));
            }
            _ => return Err(format!("unknown option {a}")),
        }
    }
    if cfg.opts.probe_callbacks && !cfg.opts.relay_callbacks {
        return Err("--probe-callbacks needs --relay-callbacks".into());
    }
    if cfg.opts.bad_reverse_call && !cfg.opts.relay_callbacks {
        return Err("--bad-reverse-call needs --relay-callbacks".into());
    }
    if cfg.opts.unknown_htype_call && !cfg.opts.relay_callbacks {
        return Err("--unknown-htype-call needs --relay-callbacks".into());
    }
    if cfg.opts.continued_reverse_call && !cfg.opts.relay_callbacks {
        return Err("--continued-reverse-call needs --relay-callbacks".into());
    }
    if cfg.opts.pad_callbacks > 0 && !cfg.opts.relay_callbacks {
        return Err("--pad-callbacks needs --relay-callbacks".into());
    }
    Ok(Some(cfg))
}

fn main() -> ExitCode {
    let cfg = match parse() {
        Ok(Some(c)) => c,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rpcrdma-responder: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match Server::new(cfg).and_then(|mut s| s.run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rpcrdma-responder: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{manpage, USAGE};

    /// The manual page has an entry for every switch of the help text.
    #[test]
    fn man_page_lists_every_switch() {
        let man = manpage::render("rpcrdma-responder", "0", USAGE);
        let mut n = 0;
        for line in USAGE.lines().filter(|l| l.starts_with("  -")) {
            let long = line
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .unwrap_or_default();
            let roff = format!("\\fB{}\\fR", long.replace('-', "\\-"));
            assert!(man.contains(&roff), "{long} missing from the manual page");
            n += 1;
        }
        assert!(n > 20, "only {n} switches found in USAGE");
        assert!(man.contains(".SH FAULT INJECTION\n"));
    }
}
