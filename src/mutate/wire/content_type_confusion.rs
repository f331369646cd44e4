//! `content_type_confusion`: the normal body under the wrong Content-Type (text/plain,
//! form-encoded, multipart), an XML rendering of the prompt, or no Content-Type at all, to
//! an endpoint that expects JSON.

use super::request::Normal;
use super::{Built, one};
use crate::mutate::Draw;
use crate::text::{Quotes, xml_escape};

pub(super) const FAMILIES: u32 = 5;

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let mut req = n.request();
    let label = match index % FAMILIES {
        0 => {
            let ct = *d.pick(&["text/plain", "text/plain; charset=utf-8"]);
            req.set("Content-Type", ct);
            format!("the JSON body as {ct}")
        }
        1 => {
            req.set("Content-Type", "application/x-www-form-urlencoded");
            "the JSON body as application/x-www-form-urlencoded".to_string()
        }
        2 => {
            let tag = *d.pick(&["input", "prompt", "query", "message"]);
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<request><{tag}>{}</{tag}></request>\n",
                xml_escape(&n.prompt, Quotes::Both)
            );
            req.set("Content-Type", "application/xml");
            req.body = xml.into_bytes();
            "the prompt as an XML document (application/xml)".to_string()
        }
        3 => {
            let boundary = format!("----flakestorm{:016x}", d.next_u64());
            let field = *d.pick(&["input", "payload", "data"]);
            let mut body = format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"\r\n\
                 Content-Type: application/json\r\n\r\n"
            )
            .into_bytes();
            body.extend_from_slice(&req.body);
            body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
            req.set(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            );
            req.body = body;
            "the JSON body as a multipart/form-data part".to_string()
        }
        _ => {
            req.remove("Content-Type");
            "the JSON body with no Content-Type".to_string()
        }
    };
    one(label, req.bytes())
}
