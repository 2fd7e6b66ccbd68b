//! The client against a fake server that breaks the protocol: every reply is checked
//! against the request before anything is copied or allocated, and a bad one is an error
//! (never a panic, never data outside the caller's buffer, never an allocation the size of
//! a length the server made up).

use lukskit_nbd::{ClientOptions, NbdClient, NbdUri};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;

fn opt_reply(s: &mut UnixStream, opt: u32, kind: u32, data: &[u8]) {
    let mut b = OPT_REPLY_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// Greeting and option haggling: structured replies accepted, GO answered with a 1 MiB
/// export.
fn handshake(s: &mut UnixStream) {
    let mut g = 0x4e42_444d_4147_4943u64.to_be_bytes().to_vec();
    g.extend_from_slice(&0x4948_4156_454f_5054u64.to_be_bytes());
    g.extend_from_slice(&3u16.to_be_bytes());
    s.write_all(&g).unwrap();
    let mut f = [0u8; 4];
    s.read_exact(&mut f).unwrap();
    loop {
        let mut h = [0u8; 16];
        s.read_exact(&mut h).unwrap();
        let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
        let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data).unwrap();
        match opt {
            8 => opt_reply(s, 8, 1, &[]),
            7 => {
                let mut info = 0u16.to_be_bytes().to_vec();
                info.extend_from_slice(&(1u64 << 20).to_be_bytes());
                info.extend_from_slice(&(1u16 | 4).to_be_bytes());
                opt_reply(s, 7, 3, &info);
                opt_reply(s, 7, 1, &[]);
                return;
            }
            o => opt_reply(s, o, (1 << 31) | 1, &[]),
        }
    }
}

/// (cookie, offset, length) of the next request.
fn request(s: &mut UnixStream) -> (u64, u64, u32) {
    let mut r = [0u8; 28];
    s.read_exact(&mut r).unwrap();
    (
        u64::from_be_bytes(r[8..16].try_into().unwrap()),
        u64::from_be_bytes(r[16..24].try_into().unwrap()),
        u32::from_be_bytes(r[24..28].try_into().unwrap()),
    )
}

fn chunk(flags: u16, kind: u16, cookie: u64, payload: &[u8], claimed_len: Option<u32>) -> Vec<u8> {
    let mut b = 0x668e_33efu32.to_be_bytes().to_vec();
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&claimed_len.unwrap_or(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(payload);
    b
}

/// Serve one connection with `respond` after the handshake, then read a 4 KiB block at
/// 8192 through the client and return the result (the client's retry finds no server).
fn read_with(respond: fn(&mut UnixStream, u64, u64, u32)) -> Result<Vec<u8>, String> {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("s");
    let l = UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        handshake(&mut s);
        let (cookie, off, len) = request(&mut s);
        respond(&mut s, cookie, off, len);
        // Keep the connection until the client closes it.
        let mut sink = [0u8; 64];
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    let uri: NbdUri = format!("nbd+unix:///?socket={}", sock.display())
        .parse()
        .unwrap();
    let opts = ClientOptions {
        reconnect_timeout: Duration::from_millis(100),
        ..ClientOptions::default()
    };
    let c = NbdClient::connect(&uri, opts).unwrap();
    let mut buf = vec![0xaau8; 4096];
    let r = c
        .read_at(&mut buf, 8192)
        .map(|()| buf)
        .map_err(|e| e.to_string());
    drop(c);
    server.join().unwrap();
    r
}

#[test]
fn a_well_behaved_reply_is_accepted() {
    let r = read_with(|s, cookie, off, len| {
        let mut p = off.to_be_bytes().to_vec();
        p.extend(std::iter::repeat_n(7u8, len as usize));
        s.write_all(&chunk(1, 1, cookie, &p, None)).unwrap();
    });
    assert_eq!(r.unwrap(), vec![7u8; 4096]);
}

#[test]
fn data_outside_the_requested_range_is_refused() {
    let r = read_with(|s, cookie, off, len| {
        let mut p = (off + 1).to_be_bytes().to_vec();
        p.extend(std::iter::repeat_n(7u8, len as usize));
        s.write_all(&chunk(1, 1, cookie, &p, None)).unwrap();
    });
    let e = r.unwrap_err();
    assert!(e.contains("server sent 4096 bytes at 8193"), "{e}");
}

#[test]
fn an_impossible_chunk_length_allocates_nothing_and_fails() {
    let r = read_with(|s, cookie, off, _| {
        let p = off.to_be_bytes().to_vec();
        s.write_all(&chunk(1, 1, cookie, &p, Some(u32::MAX)))
            .unwrap();
    });
    let e = r.unwrap_err();
    assert!(e.contains("went away during a read"), "{e}");
}

#[test]
fn unknown_cookies_and_bad_magic_are_refused() {
    let r = read_with(|s, cookie, _, _| {
        let mut b = 0x6744_6698u32.to_be_bytes().to_vec();
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&(cookie + 1000).to_be_bytes());
        s.write_all(&b).unwrap();
    });
    assert!(r.unwrap_err().contains("unknown cookie"));
    let r = read_with(|s, _, _, _| s.write_all(&[0xde, 0xad, 0xbe, 0xef]).unwrap());
    assert!(r.unwrap_err().contains("bad reply magic"));
}

#[test]
fn a_reply_that_covers_part_of_the_read_is_refused() {
    let r = read_with(|s, cookie, off, _| {
        let mut p = off.to_be_bytes().to_vec();
        p.extend(std::iter::repeat_n(7u8, 512));
        s.write_all(&chunk(1, 1, cookie, &p, None)).unwrap();
    });
    assert!(r.unwrap_err().contains("covered 512 of 4096"));
}

/// Two chunks over the same half of a read add up to its length: counting bytes alone
/// accepted that and returned the stale other half (issue 36, item 10). Overlapping chunks
/// are a protocol error; chunks that only touch are fine.
#[test]
fn overlapping_chunks_are_refused() {
    let r = read_with(|s, cookie, off, len| {
        for done in [0u16, 1] {
            let mut p = off.to_be_bytes().to_vec();
            p.extend(std::iter::repeat_n(7u8, len as usize / 2));
            s.write_all(&chunk(done, 1, cookie, &p, None)).unwrap();
        }
    });
    let e = r.unwrap_err();
    assert!(e.contains("overlapping chunks"), "{e}");
    let r = read_with(|s, cookie, off, len| {
        // A hole of the second half, then data of the first: adjacent, in any order.
        let mut h = (off + u64::from(len) / 2).to_be_bytes().to_vec();
        h.extend_from_slice(&(len / 2).to_be_bytes());
        s.write_all(&chunk(0, 2, cookie, &h, None)).unwrap();
        let mut p = off.to_be_bytes().to_vec();
        p.extend(std::iter::repeat_n(7u8, len as usize / 2));
        s.write_all(&chunk(1, 1, cookie, &p, None)).unwrap();
    });
    let mut want = vec![7u8; 2048];
    want.extend(vec![0u8; 2048]);
    assert_eq!(r.unwrap(), want);
}

#[test]
fn server_errors_carry_their_message() {
    let r = read_with(|s, cookie, _, _| {
        let msg = b"disk on fire";
        let mut p = 5u32.to_be_bytes().to_vec();
        p.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        p.extend_from_slice(msg);
        s.write_all(&chunk(1, (1 << 15) | 1, cookie, &p, None))
            .unwrap();
    });
    let e = r.unwrap_err();
    assert!(e.contains("EIO") && e.contains("disk on fire"), "{e}");
}
