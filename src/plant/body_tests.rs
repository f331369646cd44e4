use serde_json::{Value, json};

use super::*;
use crate::plant::edit_result;

fn plan(mode: Mode, draw: u64) -> Plan {
    Plan { mode, draw }
}

fn corrupt(fields: &[&str]) -> Mode {
    let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
    Plan::corrupt(&fields, 0).unwrap().mode
}

const BODY: &[u8] =
    br#"{"results": [{"id": "ORD-4821", "total": 129.99, "placed": "2026-11-28"}]}"#;

#[test]
fn a_json_body_is_corrupted_sized_and_written() {
    let e = edit_body(
        &plan(corrupt(&[]), 9),
        BODY,
        "application/json; charset=utf-8",
    )
    .unwrap();
    let n = e.len();
    let planted = e.planted.clone();
    let bytes = e.into_bytes();
    assert_eq!(bytes.len(), n, "sized before it is written");
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(planted.len(), 3);
    assert_eq!(planted[1].path, "$.results[0].total");
    assert_eq!(planted[1].original.as_deref(), Some("129.99"));
    assert_eq!(v["results"][0]["total"].to_string(), planted[1].planted);
}

#[test]
fn the_same_draw_plants_the_same_and_another_draw_others() {
    let once = |draw| {
        edit_body(&plan(corrupt(&[]), draw), BODY, "application/json")
            .unwrap()
            .into_bytes()
    };
    assert_eq!(once(5), once(5));
    assert_ne!(once(5), once(6));
}

#[test]
fn text_and_untyped_bodies_are_edited_as_what_they_are() {
    let e = edit_body(&plan(corrupt(&[]), 1), b"Total: 129.99 EUR", "text/plain").unwrap();
    assert_eq!(e.planted[0].path, "(text)");
    let out = e.into_bytes();
    assert!(
        out.starts_with(b"Total: ") && out.ends_with(b" EUR") && &out[..] != b"Total: 129.99 EUR"
    );
    // JSON sent as text/plain (or untyped) is JSON.
    let e = edit_body(&plan(corrupt(&[]), 1), BODY, "").unwrap();
    assert_eq!(e.planted[0].path, "$.results[0].id");
    let e = edit_body(
        &plan(Mode::Stale { days: 1 }, 1),
        b"as of 2026-11-28",
        "text/html",
    )
    .unwrap();
    assert_eq!(&e.into_bytes()[..], b"as of 2026-11-27");
}

#[test]
fn what_cannot_be_planted_says_why() {
    let c = plan(corrupt(&[]), 1);
    assert_eq!(
        plantable("image/png").unwrap_err().to_string(),
        "the body is image/png, neither JSON nor text"
    );
    assert!(
        plantable("text/event-stream")
            .unwrap_err()
            .to_string()
            .contains("a stream")
    );
    assert!(plantable("application/json").is_ok() && plantable("").is_ok());
    assert!(
        edit_body(&c, b"\x89PNG\r\n\x1a\n\0\0", "")
            .unwrap_err()
            .to_string()
            .contains("not UTF-8")
    );
    assert!(
        edit_body(&c, b"{\"a\": ", "application/json")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON")
    );
    assert_eq!(
        edit_body(&c, br#"{"ok": true}"#, "application/json")
            .unwrap_err()
            .to_string(),
        "the body has no number, date or short string to corrupt"
    );
    assert!(
        edit_body(&plan(corrupt(&["$.x"]), 1), BODY, "application/json")
            .unwrap_err()
            .to_string()
            .contains("no value to corrupt at $.x")
    );
    assert!(
        edit_body(&plan(corrupt(&["$.x"]), 1), b"12 apples", "text/plain")
            .unwrap_err()
            .to_string()
            .contains("`fields:`")
    );
    let stale = plan(Mode::Stale { days: 3 }, 1);
    assert!(
        edit_body(&stale, br#"{"n": 5}"#, "application/json")
            .unwrap_err()
            .to_string()
            .contains("no date")
    );
    assert!(
        edit_body(&c, b"  ", "text/plain")
            .unwrap_err()
            .to_string()
            .contains("no number")
    );
    let empty = plan(Mode::Empty, 1);
    assert_eq!(
        edit_body(&empty, b"", "application/json")
            .unwrap_err()
            .to_string(),
        "the body is already empty"
    );
}

#[test]
fn empty_leaves_the_bodys_own_kind() {
    let empty = plan(Mode::Empty, 1);
    let out = |b: &[u8], ct| edit_body(&empty, b, ct).map(|e| e.into_bytes());
    assert_eq!(&out(b"[1, 2]", "application/json").unwrap()[..], b"[]");
    assert_eq!(&out(br#"{"a": 1}"#, "application/json").unwrap()[..], b"{}");
    assert_eq!(&out(b"hello", "text/plain").unwrap()[..], b"");
    assert!(
        out(b"[]", "application/json")
            .unwrap_err()
            .to_string()
            .contains("already empty")
    );
    assert!(
        edit_body(&empty, b"[1]", "application/json")
            .unwrap()
            .planted
            .is_empty()
    );
}

#[test]
fn an_mcp_result_is_planted_in_its_structured_and_text_content_alike() {
    let mut result = json!({
        "content": [
            {"type": "text", "text": "{\"temp\": 21.5, \"city\": \"Oslo\"}"},
            {"type": "text", "text": "It is 21.5 degrees in Oslo."},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ],
        "structuredContent": {"temp": 21.5, "city": "Oslo"},
        "isError": false
    });
    let planted = edit_result(&plan(corrupt(&[]), 3), &mut result).unwrap();
    let paths: Vec<&str> = planted.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "$.result.structuredContent.temp",
            "$.result.structuredContent.city",
            "$.result.content[0].text#$.temp",
            "$.result.content[0].text#$.city",
            "$.result.content[1].text#(text)",
        ]
    );
    let temp = &planted[0].planted;
    assert!(
        planted
            .iter()
            .filter(|p| p.original.as_deref() == Some("21.5"))
            .all(|p| &p.planted == temp),
        "one original, one canary across the result"
    );
    let inner: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(inner["temp"].to_string(), *temp);
    assert_eq!(result["structuredContent"]["temp"].to_string(), *temp);
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][2]["data"], "AAAA");
    // Paths name values of the structured content and of JSON in text items.
    let mut r = json!({"content": [{"type": "text", "text": "{\"temp\": 3.5}"}, {"type": "text", "text": "3.5 C"}]});
    let planted = edit_result(&plan(corrupt(&["$.temp"]), 3), &mut r).unwrap();
    assert_eq!(planted.len(), 1);
    assert_eq!(r["content"][1]["text"], "3.5 C");
}

#[test]
fn an_mcp_result_is_emptied_or_refused_with_the_reason() {
    let mut r = json!({"content": [{"type": "text", "text": "[1, 2]"}, {"type": "text", "text": "hi"}],
        "structuredContent": {"a": 1}});
    assert!(
        edit_result(&plan(Mode::Empty, 1), &mut r)
            .unwrap()
            .is_empty()
    );
    assert_eq!(r["content"][0]["text"], "[]");
    assert_eq!(r["content"][1]["text"], "");
    assert_eq!(r["structuredContent"], json!({}));
    assert_eq!(
        edit_result(&plan(Mode::Empty, 1), &mut r)
            .unwrap_err()
            .to_string(),
        "the tool result is already empty"
    );
    let mut failed = json!({"content": [{"type": "text", "text": "boom 42"}], "isError": true});
    assert!(
        edit_result(&plan(corrupt(&[]), 1), &mut failed)
            .unwrap_err()
            .to_string()
            .contains("isError")
    );
    let mut tools = json!({"tools": []});
    assert!(
        edit_result(&plan(corrupt(&[]), 1), &mut tools)
            .unwrap_err()
            .to_string()
            .contains("no structuredContent")
    );
    let mut stale = json!({"content": [{"type": "text", "text": "as of 2026-11-28"}]});
    let planted = edit_result(&plan(Mode::Stale { days: 2 }, 1), &mut stale).unwrap();
    assert_eq!(planted[0].planted, "2026-11-26");
    assert_eq!(stale["content"][0]["text"], "as of 2026-11-26");
}
