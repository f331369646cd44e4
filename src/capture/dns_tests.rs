use super::*;

/// A query as a stub resolver sends it: id, RD, one question.
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut p = vec![];
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        p.push(label.len() as u8);
        p.extend_from_slice(label.as_bytes());
    }
    p.push(0);
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    p
}

fn rcode(resp: &[u8]) -> u8 {
    resp[3] & 0x0F
}

fn ancount(resp: &[u8]) -> u16 {
    u16::from_be_bytes([resp[6], resp[7]])
}

#[test]
fn an_a_query_gets_a_stable_fake_address_mapped_back_to_its_name() {
    let names = Names::default();
    let q = query(0x1234, "API.Search.Example", 1);
    let resp = answer(&q, &names).unwrap();
    assert_eq!(&resp[..2], &[0x12, 0x34]);
    assert_eq!(resp[2] & 0x80, 0x80, "a response");
    assert_eq!(resp[2] & 0x01, 0x01, "RD echoed");
    assert_eq!((rcode(&resp), ancount(&resp)), (0, 1));
    // The question echoed, then the record: pointer, A, IN, TTL, 4 bytes.
    assert_eq!(&resp[12..q.len()], &q[12..]);
    let rr = &resp[q.len()..];
    assert_eq!(&rr[..4], &[0xC0, 0x0C, 0, 1]);
    let addr = Ipv4Addr::new(rr[12], rr[13], rr[14], rr[15]);
    assert!(super::super::names::in_range(addr), "{addr}");
    assert_eq!(names.name(addr).as_deref(), Some("api.search.example"));
    // Asked again (any case): the same address.
    let again = answer(&query(7, "api.search.example", 1), &names).unwrap();
    assert_eq!(&again[again.len() - 4..], &addr.octets());
    let other = answer(&query(8, "llm.example", 1), &names).unwrap();
    assert_ne!(&other[other.len() - 4..], &addr.octets());
}

#[test]
fn aaaa_and_other_types_get_no_records_so_clients_use_ipv4() {
    let names = Names::default();
    for qtype in [28u16, 65, 15] {
        let resp = answer(&query(1, "llm.example", qtype), &names).unwrap();
        assert_eq!((rcode(&resp), ancount(&resp)), (0, 0), "type {qtype}");
    }
    assert!(
        names.name(Ipv4Addr::new(198, 18, 0, 1)).is_none(),
        "no name given out"
    );
}

#[test]
fn localhost_is_loopback() {
    let names = Names::default();
    let resp = answer(&query(1, "localhost", 1), &names).unwrap();
    assert_eq!(&resp[resp.len() - 4..], &[127, 0, 0, 1]);
}

#[test]
fn malformed_and_truncated_packets_are_dropped_not_answered() {
    let names = Names::default();
    let q = query(1, "llm.example", 1);
    // Every cut of a valid query short of its end.
    for n in 0..q.len() {
        assert!(answer(&q[..n], &names).is_none(), "cut at {n}");
    }
    // A response (QR set) is not a query.
    let mut resp = q.clone();
    resp[2] |= 0x80;
    assert!(answer(&resp, &names).is_none());
    // A compression pointer in a question, and a label longer than the packet.
    let mut pointer = q[..12].to_vec();
    pointer.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1]);
    assert!(answer(&pointer, &names).is_none());
    let mut long = q[..12].to_vec();
    long.extend_from_slice(&[60, b'a', b'b']);
    assert!(answer(&long, &names).is_none());
    // Random bytes never panic.
    let mut x: u32 = 12345;
    for len in 0..200 {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let _ = answer(&bytes, &names);
    }
}

#[test]
fn odd_queries_get_an_error_code() {
    let names = Names::default();
    // Two questions: FORMERR.
    let mut two = query(1, "a.example", 1);
    two[5] = 2;
    assert_eq!(rcode(&answer(&two, &names).unwrap()), 1);
    // An inverse query (opcode 1): NOTIMP.
    let mut inverse = query(1, "a.example", 1);
    inverse[2] |= 0x08;
    assert_eq!(rcode(&answer(&inverse, &names).unwrap()), 4);
    // A name no URL could carry, or class CH: REFUSED.
    assert_eq!(
        rcode(&answer(&query(1, "a b.example", 1), &names).unwrap()),
        5
    );
    let mut chaos = query(1, "version.bind", 16);
    let n = chaos.len();
    chaos[n - 1] = 3;
    assert_eq!(rcode(&answer(&chaos, &names).unwrap()), 5);
}

#[test]
fn a_full_range_is_a_server_failure() {
    let names = Names::with_capacity(2);
    for name in ["a.example", "b.example"] {
        assert_eq!(rcode(&answer(&query(1, name, 1), &names).unwrap()), 0);
    }
    assert_eq!(
        rcode(&answer(&query(1, "c.example", 1), &names).unwrap()),
        2
    );
    // Names already given keep their address.
    assert_eq!(
        rcode(&answer(&query(1, "a.example", 1), &names).unwrap()),
        0
    );
}
