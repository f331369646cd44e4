//! Checks on a CA certificate and key before flakestorm signs anything with them: the key
//! is the certificate's, the certificate is a CA, and it is valid now. A sidecar that
//! starts with a mismatched Secret (`tls.crt` and `tls.key` of different issuances) or an
//! expired CA would otherwise serve leaf certificates every client rejects, which looks
//! like the agent's bug. Errors name both files and what to do; they never quote a key.

use std::path::Path;

use rcgen::KeyPair;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::TlsError;

/// What the checks learnt: the certificate's `notAfter` (Unix seconds), for `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_after: i64,
}

/// Checks `cert_pem` (read from `cert_path`) against `key` (read from `key_path`) at Unix
/// time `now`.
pub fn check_ca(
    cert_pem: &str,
    cert_path: &Path,
    key: &KeyPair,
    key_path: &Path,
    now: i64,
) -> Result<Validity, TlsError> {
    let bad = |message: String| TlsError::BadFile {
        path: cert_path.into(),
        message,
    };
    let der = first_der(cert_pem).ok_or_else(|| {
        bad("no PEM certificate (-----BEGIN CERTIFICATE-----) in the file".into())
    })?;
    let (_, cert) = X509Certificate::from_der(&der)
        .map_err(|e| bad(format!("not a valid X.509 certificate: {e}")))?;
    if cert.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
        return Err(TlsError::KeyMismatch {
            cert: cert_path.into(),
            key: key_path.into(),
        });
    }
    if !cert.is_ca() {
        return Err(bad(
            "is not a CA certificate (basicConstraints CA:TRUE is missing): flakestorm signs \
             leaf certificates with it; make one with `flakestorm ca init` or issue a CA \
             (cert-manager: `isCA: true`)"
                .into(),
        ));
    }
    let v = cert.validity();
    let (from, until) = (v.not_before.timestamp(), v.not_after.timestamp());
    if now >= until {
        return Err(bad(format!(
            "the CA certificate expired on {} (UTC): clients reject every certificate it \
             signs; issue a new CA (`flakestorm ca init --force`, or renew the Secret), have \
             clients trust it, and restart",
            v.not_after
        )));
    }
    if now < from {
        return Err(bad(format!(
            "the CA certificate is not valid before {} (UTC): check this machine's clock, \
             or the certificate's notBefore",
            v.not_before
        )));
    }
    Ok(Validity { not_after: until })
}

/// The DER of the first certificate in a PEM text.
fn first_der(pem: &str) -> Option<Vec<u8>> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()
        .map(|c| c.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa};
    use time::{Duration, OffsetDateTime};

    fn cert(key: &KeyPair, ca: bool, from: OffsetDateTime, until: OffsetDateTime) -> String {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        if ca {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        p.not_before = from;
        p.not_after = until;
        p.self_signed(key).unwrap().pem()
    }

    #[test]
    fn a_matching_valid_ca_passes_and_each_fault_is_named() {
        let (c, k) = (Path::new("/s/tls.crt"), Path::new("/s/tls.key"));
        let now = OffsetDateTime::now_utc();
        let key = KeyPair::generate().unwrap();
        let other = KeyPair::generate().unwrap();
        let good = cert(
            &key,
            true,
            now - Duration::days(1),
            now + Duration::days(30),
        );
        let t = now.unix_timestamp();
        let v = check_ca(&good, c, &key, k, t).unwrap();
        assert!(v.not_after > t);
        let err = check_ca(&good, c, &other, k, t).unwrap_err().to_string();
        assert!(
            err.contains("/s/tls.crt") && err.contains("/s/tls.key") && err.contains("match"),
            "{err}"
        );
        let old = cert(&key, true, now - Duration::days(9), now - Duration::days(2));
        let err = check_ca(&old, c, &key, k, t).unwrap_err().to_string();
        assert!(
            err.contains("expired on") && err.contains("tls.crt"),
            "{err}"
        );
        let early = cert(&key, true, now + Duration::days(2), now + Duration::days(9));
        let err = check_ca(&early, c, &key, k, t).unwrap_err().to_string();
        assert!(err.contains("not valid before"), "{err}");
        let leaf = cert(
            &key,
            false,
            now - Duration::days(1),
            now + Duration::days(9),
        );
        let err = check_ca(&leaf, c, &key, k, t).unwrap_err().to_string();
        assert!(err.contains("not a CA certificate"), "{err}");
        let err = check_ca("junk", c, &key, k, t).unwrap_err().to_string();
        assert!(err.contains("no PEM certificate"), "{err}");
    }
}
