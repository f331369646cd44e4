//! Semantic checks after deserialization: addresses, globs, names, ranges, files, and the
//! control-token rule. Each check appends errors; none stops the others.

use std::collections::HashSet;

use super::ConfigError;
use super::schema::*;
use crate::chaos::spec::ChaosSpec;

/// Checks `c` and compiles `chaos` (the parsed `chaos:` section) into `c.chaos`.
pub fn validate(c: &mut Config, chaos: &ChaosSpec, errors: &mut Vec<ConfigError>) {
    proxy(&mut c.proxy, errors);
    control(&c.control, errors);
    ca(&c.ca, errors);
    tools(&mut c.tools, errors);
    for (i, l) in c.llm.iter().enumerate() {
        url_globs(&format!("llm[{i}].match_url"), &l.match_url, errors);
    }
    if c.journal.capacity == 0 {
        errors.push(ConfigError::new("journal.capacity", "must be at least 1"));
    }
    if c.journal.max_bytes == 0 {
        errors.push(ConfigError::new("journal.max_bytes", "must be at least 1"));
    }
    advanced(&c.advanced, errors);
    super::trials::check(c, errors);
    rewrite_cap(&c.proxy, errors);
    match super::chaos_rules::compile_chaos(chaos, &c.tools, "chaos") {
        Ok(compiled) => c.chaos = compiled,
        Err(e) => errors.extend(e),
    }
}

fn proxy(p: &mut ProxySpec, errors: &mut Vec<ConfigError>) {
    if let Err(e) = p.listen.get() {
        errors.push(ConfigError::new("proxy.listen", e));
    }
    // Compiled as read (`HostGlobs`): only their bad patterns are left to report.
    for (path, list) in [
        ("proxy.intercept", &p.intercept),
        ("proxy.passthrough", &p.passthrough),
    ] {
        for (i, e) in list.bad() {
            errors.push(ConfigError::new(
                format!("{path}[{i}]"),
                format!("invalid glob `{}`: {e}", list[*i]),
            ));
        }
    }
    for (field, v) in [
        ("connect_timeout_ms", p.connect_timeout_ms),
        ("response_timeout_ms", p.response_timeout_ms),
        ("drain_timeout_ms", p.drain_timeout_ms),
        ("header_timeout_ms", p.header_timeout_ms),
        ("idle_timeout_ms", p.idle_timeout_ms),
        ("tls_handshake_timeout_ms", p.tls_handshake_timeout_ms),
    ] {
        if v == 0 {
            errors.push(ConfigError::new(
                format!("proxy.{field}"),
                "must be greater than 0",
            ));
        }
    }
    if p.max_header_bytes < 8192 {
        errors.push(ConfigError::new(
            "proxy.max_header_bytes",
            "must be at least 8192",
        ));
    }
    if p.max_connections == 0 {
        errors.push(ConfigError::new(
            "proxy.max_connections",
            "must be at least 1",
        ));
    }
    if p.leaf_cache_size == 0 {
        errors.push(ConfigError::new(
            "proxy.leaf_cache_size",
            "must be at least 1",
        ));
    }
    if let Some(Err(e)) = p.upstream_ca_file.clone().map(|f| p.trust_upstream_ca(f)) {
        errors.push(ConfigError::new("proxy.upstream_ca_file", e.to_string()));
    }
    users(&p.users, errors);
    reverse(&p.reverse, errors);
    for (i, entry) in p.allow_loopback_targets.iter().enumerate() {
        if let Err(e) = entry.get() {
            errors.push(ConfigError::new(
                format!("proxy.allow_loopback_targets[{i}]"),
                e,
            ));
        }
    }
}

fn users(users: &[UserSpec], errors: &mut Vec<ConfigError>) {
    let mut seen = HashSet::new();
    for (i, u) in users.iter().enumerate() {
        if u.name.is_empty() || u.name.contains(':') {
            errors.push(ConfigError::new(
                format!("proxy.users[{i}].name"),
                "must be non-empty and contain no `:`",
            ));
        } else if !seen.insert(&u.name) {
            errors.push(ConfigError::new(
                format!("proxy.users[{i}].name"),
                format!("duplicate user `{}`", u.name),
            ));
        }
        if u.password.is_empty() {
            errors.push(ConfigError::new(
                format!("proxy.users[{i}].password"),
                "must not be empty",
            ));
        }
    }
}

fn reverse(routes: &[ReverseSpec], errors: &mut Vec<ConfigError>) {
    let mut seen = HashSet::new();
    for (i, r) in routes.iter().enumerate() {
        let path = format!("proxy.reverse[{i}]");
        if !r.prefix.starts_with('/') || r.prefix.len() < 2 {
            errors.push(ConfigError::new(
                format!("{path}.prefix"),
                "must start with `/` and name a path, e.g. /openai",
            ));
        } else if !seen.insert(r.prefix.trim_end_matches('/')) {
            errors.push(ConfigError::new(
                format!("{path}.prefix"),
                format!("duplicate prefix `{}`", r.prefix),
            ));
        }
        if let Err(e) = r.upstream.get() {
            errors.push(ConfigError::new(format!("{path}.upstream"), e));
        }
    }
}

/// `ca.cert_file` and `ca.key_file` come as a pair (the files themselves are read and
/// checked when the daemon starts).
fn ca(c: &CaSpec, errors: &mut Vec<ConfigError>) {
    let missing = match (&c.cert_file, &c.key_file) {
        (Some(_), None) => Some(("ca.key_file", "ca.cert_file")),
        (None, Some(_)) => Some(("ca.cert_file", "ca.key_file")),
        _ => None,
    };
    if let Some((path, other)) = missing {
        errors.push(ConfigError::new(
            path,
            format!(
                "required with {other}: give both the CA certificate and its key (e.g. a \
                 Secret's tls.crt and tls.key), or neither to use ca.dir"
            ),
        ));
    }
}

/// The fewest characters a `control.token` may have off loopback: 32 hex characters are
/// 128 bits, beyond any guessing over the network.
pub const MIN_TOKEN_CHARS: usize = 32;

fn control(c: &ControlSpec, errors: &mut Vec<ConfigError>) {
    match c.listen.get() {
        Err(e) => errors.push(ConfigError::new("control.listen", e)),
        Ok(addr) if !addr.ip().is_loopback() && c.token.as_deref().is_none_or(str::is_empty) => {
            errors.push(ConfigError::new(
                "control.token",
                format!("required when control.listen ({addr}) is not a loopback address; use token: \"${{FLAKESTORM_API_TOKEN}}\""),
            ));
        }
        // A token that did not load (an unset variable) is reported as that, not its length.
        Ok(addr)
            if !addr.ip().is_loopback() && !errors.iter().any(|e| e.path == "control.token") =>
        {
            let n = c.token.as_deref().map_or(0, |t| t.chars().count());
            if n < MIN_TOKEN_CHARS {
                // The length only: the value is a secret.
                errors.push(ConfigError::new(
                    "control.token",
                    format!(
                        "{n} characters, too short for control.listen {addr}, which is not a \
                         loopback address: use at least {MIN_TOKEN_CHARS} (e.g. the output \
                         of `openssl rand -hex 32`)"
                    ),
                ));
            }
        }
        Ok(_) => {}
    }
    control_limits(c, errors);
    if !(1..=64).contains(&c.max_parallel_runs) {
        errors.push(ConfigError::new(
            "control.max_parallel_runs",
            format!("{} is outside 1..=64", c.max_parallel_runs),
        ));
    }
    for (i, host) in c.allowed_hosts.iter().enumerate() {
        if let Err(why) = allowed_host(host) {
            errors.push(ConfigError::new(format!("control.allowed_hosts[{i}]"), why));
        }
    }
    for (i, name) in c.expose_env.iter().enumerate() {
        if !super::expand::is_var_name(name) {
            errors.push(ConfigError::new(
                format!("control.expose_env[{i}]"),
                format!("{name:?} is not an environment variable name (letters, digits, `_`)"),
            ));
        }
    }
}

/// `control.body_timeout_ms` and `control.max_import_bytes` within their ranges.
fn control_limits(c: &ControlSpec, errors: &mut Vec<ConfigError>) {
    if !(100..=3_600_000).contains(&c.body_timeout_ms) {
        errors.push(ConfigError::new(
            "control.body_timeout_ms",
            format!(
                "{} is outside 100..=3600000 (0.1 s to an hour)",
                c.body_timeout_ms
            ),
        ));
    }
    // A stored report is read back whole (`GET /v1/runs/{id}/report`): no larger than
    // the reports flakestorm reads.
    let max = crate::files::MAX_REPORT;
    if !(1024..=max).contains(&c.max_import_bytes) {
        errors.push(ConfigError::new(
            "control.max_import_bytes",
            format!(
                "{} is outside 1024..={max} (1 KiB to 64 MiB, the largest report flakestorm \
                 reads back)",
                c.max_import_bytes
            ),
        ));
    }
}

/// A `control.allowed_hosts` entry: a host name as a `Host` header carries it, without a
/// port, or `*.` and a domain.
fn allowed_host(host: &str) -> Result<(), String> {
    let name = host.strip_prefix("*.").unwrap_or(host);
    if host == "*" {
        return Err(
            "`*` would let any web page reach the control API through DNS \
                    rebinding; list the names clients use"
                .into(),
        );
    }
    let label_ok = |l: &str| {
        !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!(
            "{host:?} is not a host name (no scheme, port or path: e.g. flakestorm.ci.svc or \
             *.example.com)"
        ));
    }
    Ok(())
}

fn tools(tools: &mut [ToolSpec], errors: &mut Vec<ConfigError>) {
    let mut seen = HashSet::new();
    for (i, t) in tools.iter_mut().enumerate() {
        if t.transport == ToolTransport::Stdio && !stdio_tool(i, t, errors) {
            continue;
        }
        if t.name.is_empty() || t.name == "*" {
            errors.push(ConfigError::new(
                format!("tools[{i}].name"),
                "must be a non-empty name other than `*`",
            ));
        } else if !seen.insert(&t.name) {
            errors.push(ConfigError::new(
                format!("tools[{i}].name"),
                format!("duplicate tool `{}`", t.name),
            ));
        }
        url_globs(&format!("tools[{i}].match_url"), &t.match_url, errors);
    }
}

/// A `transport: stdio` tool: an MCP server `flakestorm wrap --tool NAME` bridges, named by
/// a URL path segment, whose URLs are its bridge's (written, they must be those). False
/// when its name cannot be one (then it has no URLs to check).
fn stdio_tool(i: usize, t: &mut ToolSpec, errors: &mut Vec<ConfigError>) -> bool {
    use crate::mcp::stdio;
    if t.protocol != ToolProtocol::Mcp {
        errors.push(ConfigError::new(
            format!("tools[{i}].transport"),
            "`stdio` is MCP's stdio transport: add `protocol: mcp`",
        ));
    }
    if !stdio::valid_tool_name(&t.name) {
        errors.push(ConfigError::new(
            format!("tools[{i}].name"),
            "a stdio tool's name is what `flakestorm wrap --tool` gives: letters, digits, \
             `-`, `_` and `.` (at most 64)",
        ));
        return false;
    }
    let own = stdio::tool_glob(&t.name);
    match t.match_url.len() {
        0 => t.match_url = UrlGlobs::from(own.as_str()),
        1 if t.match_url[0] == own => {}
        _ => errors.push(ConfigError::new(
            format!("tools[{i}].match_url"),
            "a `transport: stdio` tool has no URL: `flakestorm wrap --tool NAME` carries its \
             messages; remove match_url",
        )),
    }
    true
}

/// A `match_url` compiled as it was read: every bad pattern reported with its index.
fn url_globs(path: &str, globs: &UrlGlobs, errors: &mut Vec<ConfigError>) {
    if globs.is_empty() {
        errors.push(ConfigError::new(path, "needs at least one URL glob"));
    }
    for (i, e) in globs.bad() {
        errors.push(ConfigError::new(
            format!("{path}[{i}]"),
            format!("invalid glob `{}`: {e}", globs[i]),
        ));
    }
}

/// `proxy.max_rewrite_bytes`: the range of caps that make sense (issue #9).
pub const REWRITE_CAP_RANGE: std::ops::RangeInclusive<usize> = 1024..=(1 << 30);

fn rewrite_cap(p: &ProxySpec, errors: &mut Vec<ConfigError>) {
    if !REWRITE_CAP_RANGE.contains(&p.max_rewrite_bytes) {
        errors.push(ConfigError::new(
            "proxy.max_rewrite_bytes",
            format!(
                "{} is outside 1024..=1073741824 (1 KiB to 1 GiB)",
                p.max_rewrite_bytes
            ),
        ));
    }
}

fn advanced(a: &AdvancedSpec, errors: &mut Vec<ConfigError>) {
    if let Some(n) = a.concurrency.filter(|n| !(1..=100).contains(n)) {
        errors.push(ConfigError::new(
            "advanced.concurrency",
            format!("{n} is out of range 1..=100"),
        ));
    }
    if a.settle_ms > 60_000 {
        errors.push(ConfigError::new(
            "advanced.settle_ms",
            format!("{} is out of range 0..=60000 (milliseconds)", a.settle_ms),
        ));
    }
    super::settle::check(a, errors);
    if a.retries > 5 {
        errors.push(ConfigError::new(
            "advanced.retries",
            format!("{} is out of range 0..=5", a.retries),
        ));
    }
    if let Some(e) = &a.embeddings {
        super::embeddings::check_embeddings(e, errors);
    }
}
