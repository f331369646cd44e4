//! nginx in the sidecar scenario: the origin, a separate process (so its CPU per request can
//! be read from `/proc`), one worker without a master, HTTPS with the `tests/fixtures`
//! certificate, serving the same 1 KiB JSON body as the in-process origins; and the
//! reference proxy, the same nginx as a TLS-terminating reverse proxy in front of it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::origins::BODY;

const NGINX: &str = "/usr/sbin/nginx";

/// What an nginx process is in the sidecar scenario.
#[derive(Clone, Copy)]
pub enum Role {
    /// Serves the body.
    Origin,
    /// Terminates the client's TLS and forwards over a kept-alive, verified TLS connection to
    /// the origin on `origin_port`: the work an intercepting proxy does per request (two TLS
    /// sessions, HTTP parsed twice), done by a proxy long tuned for it.
    ReverseProxy { origin_port: u16 },
}

pub struct Nginx {
    child: Child,
    pub pid: u32,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Whether nginx is installed (the sidecar table is left out without it).
    pub fn available() -> bool {
        Path::new(NGINX).exists()
    }

    /// The version nginx says it is (`nginx -v`).
    pub fn version() -> String {
        let out = Command::new(NGINX).arg("-v").output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned());
        let text = text.unwrap_or_default();
        text.trim().rsplit('/').next().unwrap_or("?").to_string()
    }

    /// Starts nginx as `role` on a free loopback port, pinned to `cpu`.
    pub fn start(root: &Path, cpu: usize, role: Role) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("body.json"), &BODY[..])?;
        // nginx cannot report a port it chose: take a free one and hand it over. Between the
        // release and nginx's bind another socket could take it; the start then fails loudly.
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config(root, dir.path(), port, role))?;
        // Pinned when the bench pinned itself (taskset is there, and CPU `cpu` with it).
        let mut command = match crate::machine::pinned() {
            true => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string(), NGINX]);
                c
            }
            false => Command::new(NGINX),
        };
        let child = command
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning nginx")?;
        let mut nginx = Nginx {
            pid: child.id(),
            child,
            port,
            dir,
        };
        nginx.wait_ready()?;
        Ok(nginx)
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                let log = std::fs::read_to_string(self.dir.path().join("error.log"));
                bail!(
                    "nginx exited at start ({status}): {}",
                    log.unwrap_or_default()
                );
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("nginx did not listen on port {} within 10 s", self.port)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(root: &Path, dir: &Path, port: u16, role: Role) -> String {
    let fixtures: PathBuf = root.join("tests/fixtures");
    let d = dir.display();
    let (upstream, location) = match role {
        Role::Origin => (
            String::new(),
            format!(
                "location = /v1/chat/completions {{ default_type application/json; \
                 alias {d}/body.json; }}"
            ),
        ),
        Role::ReverseProxy { origin_port } => (
            format!("  upstream origin {{ server 127.0.0.1:{origin_port}; keepalive 64; }}\n"),
            format!(
                "location / {{ proxy_pass https://origin; proxy_http_version 1.1; \
                 proxy_set_header Connection \"\"; proxy_ssl_server_name on; \
                 proxy_ssl_name localhost; proxy_ssl_verify on; \
                 proxy_ssl_trusted_certificate {ca}; proxy_ssl_session_reuse on; }}",
                ca = fixtures.join("test-ca.pem").display(),
            ),
        ),
    };
    format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  keepalive_requests 1000000;\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         {upstream}\
         server {{\n    listen 127.0.0.1:{port} ssl;\n    server_name localhost;\n\
         ssl_certificate {cert};\n    ssl_certificate_key {key};\n\
         {location}\n\
         }}\n}}\n",
        cert = fixtures.join("origin.pem").display(),
        key = fixtures.join("origin.key").display(),
    )
}
