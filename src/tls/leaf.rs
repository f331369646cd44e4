//! Leaf certificates for intercepted hosts, signed by the CA and cached per host in a
//! bounded LRU. One leaf key pair serves every host (signing, not key generation, is the
//! per-host cost). A bad host name is an error for that connection, never a panic.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, SystemTime, UNIX_EPOCH};

use lru::LruCache;
use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose, SanType,
    SerialNumber,
};
use rustls::ServerConfig;
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls_pki_types::{CertificateDer, DnsName, PrivateKeyDer, PrivatePkcs8KeyDer};
use time::{Duration, OffsetDateTime};

use super::{CertificateAuthority, TlsError, provider};
use crate::telemetry::Metrics;

/// Leaves are valid for 30 days and re-issued after 7, so a long-running daemon never
/// serves an expired one.
const LEAF_VALIDITY_DAYS: i64 = 30;
const LEAF_REISSUE_AFTER: StdDuration = StdDuration::from_secs(7 * 24 * 3600);

struct Entry {
    config: Arc<ServerConfig>,
    issued: SystemTime,
}

pub struct LeafCache {
    ca: Arc<CertificateAuthority>,
    key: KeyPair,
    ca_der: CertificateDer<'static>,
    cache: Mutex<LruCache<String, Entry>>,
    sessions: Arc<dyn StoresServerSessions>,
    ticketer: Arc<dyn ProducesTickets>,
    serial: AtomicU64,
    metrics: Metrics,
}

impl LeafCache {
    pub fn new(
        ca: Arc<CertificateAuthority>,
        capacity: usize,
        metrics: Metrics,
    ) -> Result<Self, TlsError> {
        let ca_der = rustls_pki_types::pem::PemObject::from_pem_slice(ca.cert_pem().as_bytes())
            .map_err(|e| TlsError::BadFile {
                path: ca.cert_path().into(),
                message: e.to_string(),
            })?;
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Ok(LeafCache {
            ca,
            key: KeyPair::generate()?,
            ca_der,
            cache: Mutex::new(LruCache::new(capacity)),
            sessions: ServerSessionMemoryCache::new(4096),
            ticketer: rustls::crypto::ring::Ticketer::new()?,
            serial: AtomicU64::new(0),
            metrics,
        })
    }

    /// The TLS server configuration presenting a leaf for `host` (DNS name or IP).
    #[allow(clippy::disallowed_methods)] // certificates age in wall-clock time
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, TlsError> {
        let host = normalize(host);
        if let Some(e) = self.lock().get(&host)
            && e.issued.elapsed().unwrap_or_default() < LEAF_REISSUE_AFTER
        {
            return Ok(e.config.clone());
        }
        // Issue outside the lock: signing takes tens of microseconds, lookups must not wait.
        let config = Arc::new(self.issue(&host)?);
        let mut cache = self.lock();
        cache.put(
            host,
            Entry {
                config: config.clone(),
                issued: SystemTime::now(),
            },
        );
        self.metrics.set_leaf_cache_size(cache.len());
        Ok(config)
    }

    fn issue(&self, host: &str) -> Result<ServerConfig, TlsError> {
        let san = san(host)?;
        let mut p = CertificateParams::new(Vec::<String>::new())?;
        p.subject_alt_names = vec![san];
        p.distinguished_name.push(DnType::CommonName, host);
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let now = OffsetDateTime::now_utc();
        p.not_before = now - Duration::days(1);
        p.not_after = now + Duration::days(LEAF_VALIDITY_DAYS);
        p.serial_number = Some(self.next_serial());
        let cert = p.signed_by(&self.key, self.ca.issuer())?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.ca_der.clone()], key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = self.sessions.clone();
        config.ticketer = self.ticketer.clone();
        Ok(config)
    }

    /// Unique per leaf: clients such as Firefox reject two certificates from one issuer
    /// with the same serial.
    #[allow(clippy::disallowed_methods)] // serials unique across restarts: wall clock
    fn next_serial(&self) -> SerialNumber {
        let n = self.serial.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&nanos.to_be_bytes());
        bytes[8..].copy_from_slice(&n.to_be_bytes());
        bytes[0] &= 0x7f; // keep it a positive integer
        SerialNumber::from(bytes.to_vec())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Entry>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn san(host: &str) -> Result<SanType, TlsError> {
    let bad = || TlsError::BadHost {
        host: host.to_string(),
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    DnsName::try_from(host).map_err(|_| bad())?;
    Ok(SanType::DnsName(host.try_into().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: usize) -> LeafCache {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::create(dir.path(), false).unwrap();
        LeafCache::new(Arc::new(ca), capacity, Metrics::new()).unwrap()
    }

    #[test]
    fn caches_per_host_and_stays_bounded() {
        let c = cache(2);
        let a = c.server_config("api.example.com").unwrap();
        let a2 = c.server_config("API.example.com.").unwrap();
        assert!(Arc::ptr_eq(&a, &a2), "same host must hit the cache");
        c.server_config("127.0.0.1").unwrap();
        c.server_config("[::1]").unwrap();
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn bad_hosts_are_errors_not_panics() {
        let c = cache(4);
        for host in ["", "bad host", "exa_mple..com", "\u{0}x"] {
            assert!(
                matches!(c.server_config(host), Err(TlsError::BadHost { .. })),
                "{host:?}"
            );
        }
    }
}
