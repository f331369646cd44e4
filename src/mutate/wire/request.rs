//! The agent's normal request as raw parts (method, target, Host, `agent.headers`, the JSON
//! body with the prompt), which each wire attack bends one way, and the bytes of a request
//! assembled exactly as its parts say: nothing is normalised.

use crate::agent::render;
use crate::config::AgentTarget;

/// What every attack starts from: the agent's normal request.
pub(crate) struct Normal {
    pub method: String,
    /// The endpoint's path and query, as the request target.
    pub target: String,
    /// The endpoint's path alone.
    pub path: String,
    /// The endpoint's query, if any (without `?`).
    pub query: Option<String>,
    pub host: String,
    pub template: String,
    pub prompt: String,
    /// `agent.headers`, in the order `HeaderMap` keeps them.
    agent_headers: Vec<(String, Vec<u8>)>,
}

impl Normal {
    pub fn of(target: &AgentTarget, prompt: &str) -> Normal {
        let uri = &target.endpoint;
        let path = match uri.path() {
            "" => "/".to_string(),
            p => p.to_string(),
        };
        let query = uri.query().map(str::to_string);
        let host = uri
            .authority()
            .map(|a| {
                a.as_str()
                    .rsplit('@')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default();
        Normal {
            method: target.method.as_str().to_string(),
            target: match &query {
                Some(q) => format!("{path}?{q}"),
                None => path.clone(),
            },
            path,
            query,
            host,
            template: target.request_template.clone(),
            prompt: prompt.to_string(),
            agent_headers: target
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// The normal JSON body: the template with the prompt JSON-escaped into it.
    pub fn body(&self) -> Vec<u8> {
        self.body_for(&self.prompt)
    }

    /// The template with `prompt` in it instead.
    pub fn body_for(&self, prompt: &str) -> Vec<u8> {
        render(&self.template, prompt).into_bytes()
    }

    /// The normal body grown to `size` bytes by repeating `filler` right after the prompt,
    /// inside its JSON string (a template without `{prompt}`: trailing JSON whitespace).
    /// Built in one allocation.
    pub fn body_padded(&self, filler: &str, size: usize) -> Vec<u8> {
        let Some((before, after)) = self.template.split_once("{prompt}") else {
            let mut body = self.body();
            let len = body.len().max(size);
            body.resize(len, b' ');
            return body;
        };
        let prompt = render("{prompt}", &self.prompt);
        let after = render(after, &self.prompt);
        let mut body = Vec::with_capacity(size.max(before.len() + prompt.len() + after.len()));
        body.extend_from_slice(before.as_bytes());
        body.extend_from_slice(prompt.as_bytes());
        let end = size.saturating_sub(after.len());
        while !filler.is_empty() && body.len() + filler.len() <= end {
            body.extend_from_slice(filler.as_bytes());
        }
        // The last few bytes, where a whole unit no longer fits.
        while body.len() < end {
            body.push(b' ');
        }
        body.extend_from_slice(after.as_bytes());
        body
    }

    /// The normal request, as the driver would send it, ready to be bent.
    pub fn request(&self) -> Raw {
        self.request_with(self.body())
    }

    /// The normal request with another body.
    pub fn request_with(&self, body: Vec<u8>) -> Raw {
        let mut raw = Raw {
            method: self.method.clone(),
            target: self.target.clone(),
            version: "HTTP/1.1",
            headers: vec![
                ("Host".into(), self.host.clone().into_bytes()),
                ("Content-Type".into(), b"application/json".to_vec()),
            ],
            body,
            content_length: true,
            eol: "\r\n",
        };
        for (name, value) in &self.agent_headers {
            raw.set(name, value.clone());
        }
        raw.push("Connection", "close");
        raw
    }
}

/// A request as parts; `bytes` joins them exactly.
pub(crate) struct Raw {
    pub method: String,
    pub target: String,
    pub version: &'static str,
    /// Header fields in order; a value is bytes, so it may hold what no client allows.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// Append `Content-Length: <body length>` after the other fields.
    pub content_length: bool,
    /// The line ending of the start line and the header fields.
    pub eol: &'static str,
}

impl Raw {
    /// Appends a field.
    pub fn push(&mut self, name: &str, value: impl Into<Vec<u8>>) {
        self.headers.push((name.to_string(), value.into()));
    }

    /// Replaces the first field named `name` (any case), or appends it.
    pub fn set(&mut self, name: &str, value: impl Into<Vec<u8>>) {
        let value = value.into();
        match self
            .headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some(field) => field.1 = value,
            None => self.push(name, value),
        }
    }

    /// Removes every field named `name` (any case).
    pub fn remove(&mut self, name: &str) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    /// The request's bytes, allocated once.
    pub fn bytes(&self) -> Vec<u8> {
        let eol = self.eol.as_bytes();
        let length = self.content_length.then(|| self.body.len().to_string());
        let head_len = self.method.len()
            + self.target.len()
            + self.version.len()
            + 2
            + self
                .headers
                .iter()
                .map(|(n, v)| n.len() + v.len() + 2 + eol.len())
                .sum::<usize>()
            + length.as_ref().map_or(0, |l| l.len() + 16 + eol.len())
            + 2 * eol.len();
        let mut out = Vec::with_capacity(head_len + self.body.len());
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.target.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.version.as_bytes());
        out.extend_from_slice(eol);
        let mut field = |name: &[u8], value: &[u8]| {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(eol);
        };
        for (name, value) in &self.headers {
            field(name.as_bytes(), value);
        }
        if let Some(l) = &length {
            field(b"Content-Length", l.as_bytes());
        }
        out.extend_from_slice(eol);
        out.extend_from_slice(&self.body);
        out
    }
}

/// `body` with `field` (`"name":value`) first in its top-level JSON object, or, when the
/// body is not an object, the body wrapped as `{field,"request":body}`.
pub(crate) fn insert_field(body: &[u8], field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + field.len() + 16);
    let open = body.iter().position(|b| !b.is_ascii_whitespace());
    match open {
        Some(at) if body[at] == b'{' => {
            let rest = &body[at + 1..];
            let empty = rest
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| *b == b'}');
            out.extend_from_slice(&body[..=at]);
            out.extend_from_slice(field);
            if !empty {
                out.push(b',');
            }
            out.extend_from_slice(rest);
        }
        _ => {
            out.push(b'{');
            out.extend_from_slice(field);
            out.extend_from_slice(b",\"request\":");
            out.extend_from_slice(if body.is_empty() { b"null" } else { body });
            out.push(b'}');
        }
    }
    out
}

/// `text` percent-encoded for a query value: unreserved characters as they are, every other
/// byte as `%XX`.
pub(crate) fn percent(text: &[u8]) -> String {
    percent_encoding::percent_encode(text, crate::exchange::URL_UNRESERVED).to_string()
}

/// `body` in chunked transfer coding, in chunks of `size` bytes, each size line followed by
/// `ext` (e.g. `;note=1`), with the final chunk when `last`.
pub(crate) fn chunked(body: &[u8], size: usize, ext: &str, last: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / size.max(1) * 16 + 16);
    for part in body.chunks(size.max(1)) {
        out.extend_from_slice(format!("{:x}{ext}\r\n", part.len()).as_bytes());
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
    if last {
        out.extend_from_slice(format!("0{ext}\r\n\r\n").as_bytes());
    }
    out
}
