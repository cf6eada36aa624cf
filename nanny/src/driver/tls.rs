//! TLS for SSL_GET, with rustls.
//!
//! keepalived does not verify server certificates (its SSL context has no
//! verification set), so by default nanny does not either: a health check
//! asks "does the service answer", and self-signed certificates are common
//! on real servers. Handshake signatures are still checked, so the peer
//! holds the key of the certificate it shows. With [`TlsSpec::verify`],
//! the certificate must chain to the CA file given.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

use crate::outcome::Failure;
use crate::spec::{Endpoint, TlsSpec};

fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The connector for `tls`, built once per distinct TLS setting and shared
/// by every attempt (reading certificates at each attempt would cost more
/// than the check).
pub fn connector(tls: &TlsSpec) -> Result<TlsConnector, Failure> {
    static CONNECTORS: OnceLock<Mutex<HashMap<TlsSpec, TlsConnector>>> = OnceLock::new();
    let connectors = CONNECTORS.get_or_init(Default::default);
    let mut connectors = connectors
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(connector) = connectors.get(tls) {
        return Ok(connector.clone());
    }
    let connector = build(tls)?;
    connectors.insert(tls.clone(), connector.clone());
    Ok(connector)
}

fn build(tls: &TlsSpec) -> Result<TlsConnector, Failure> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| Failure::Tls(error.to_string()))?;
    let builder = if tls.verify {
        let Some(ca_file) = &tls.ca_file else {
            return Err(Failure::Tls(
                "certificate verification needs a CA file".to_owned(),
            ));
        };
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_file_iter(Path::new(ca_file))
            .map_err(|error| Failure::Tls(format!("{ca_file}: {error}")))?
        {
            let certificate =
                certificate.map_err(|error| Failure::Tls(format!("{ca_file}: {error}")))?;
            roots
                .add(certificate)
                .map_err(|error| Failure::Tls(format!("{ca_file}: {error}")))?;
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
    };
    // The SSL block's certificate and key are presented to servers that ask
    // (keepalived's SSL_CTX_use_certificate_chain_file/PrivateKey_file).
    let config = match &tls.client_certificate {
        Some((certificate_file, key_file)) => {
            let chain = CertificateDer::pem_file_iter(Path::new(certificate_file))
                .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
                .map_err(|error| Failure::Tls(format!("{certificate_file}: {error}")))?;
            let key = PrivateKeyDer::from_pem_file(Path::new(key_file))
                .map_err(|error| Failure::Tls(format!("{key_file}: {error}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| Failure::Tls(format!("{certificate_file}: {error}")))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The name sent with SNI (`enable_sni`: the virtual host); without one,
/// the address, which rustls does not send as SNI (keepalived sends none).
pub fn server_name(tls: &TlsSpec, endpoint: &Endpoint) -> Result<ServerName<'static>, Failure> {
    match &tls.server_name {
        Some(name) => ServerName::try_from(name.clone())
            .map_err(|error| Failure::Tls(format!("server name {name:?}: {error}"))),
        None => Ok(ServerName::IpAddress(endpoint.address.ip().into())),
    }
}

/// Accepts any certificate, as keepalived does; still checks signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::http::check;
    use crate::driver::tcp::tests::endpoint;
    use crate::outcome::Success;
    use crate::spec::{HttpSpec, HttpVersion, UrlSpec};
    use std::net::SocketAddr;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    const CERTIFICATE: &[u8] = include_bytes!("testdata/server.crt");
    const KEY: &[u8] = include_bytes!("testdata/server.key");

    fn testdata(name: &str) -> String {
        format!("{}/src/driver/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// A TLS server answering `body`; reports the SNI each client sent.
    async fn tls_server(
        body: &'static str,
    ) -> (SocketAddr, mpsc::UnboundedReceiver<Option<String>>) {
        let certificate = CertificateDer::from_pem_slice(CERTIFICATE).unwrap();
        let key = PrivateKeyDer::from_pem_slice(KEY).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certificate], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let Ok(mut stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let _ = sender.send(stream.get_ref().1.server_name().map(str::to_owned));
                    let mut request = [0u8; 1024];
                    let _ = stream.read(&mut request).await;
                    let response = format!("HTTP/1.0 200 OK\r\n\r\n{body}");
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        (address, receiver)
    }

    fn ssl_get(tls: TlsSpec, digest_of: &[u8]) -> HttpSpec {
        use md5::{Digest, Md5};
        HttpSpec {
            version: HttpVersion::Http10,
            tls: Some(tls),
            urls: vec![UrlSpec {
                path: "/".to_owned(),
                digest: Some(Md5::digest(digest_of).into()),
                status_codes: vec![200..=299],
                virtualhost: Some("www.example.test".to_owned()),
                regex: None,
            }],
        }
    }

    const TIMEOUT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn ssl_get_without_verification_or_sni_like_keepalived() {
        let (address, mut names) = tls_server("secure").await;
        let tls = TlsSpec {
            server_name: None,
            verify: false,
            ca_file: None,
            client_certificate: None,
        };
        let outcome = check(&endpoint(address), &ssl_get(tls, b"secure"), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
        assert_eq!(names.recv().await.unwrap(), None);
    }

    #[tokio::test]
    async fn enable_sni_sends_the_virtual_host() {
        let (address, mut names) = tls_server("secure").await;
        let tls = TlsSpec {
            server_name: Some("www.example.test".to_owned()),
            verify: false,
            ca_file: None,
            client_certificate: None,
        };
        let outcome = check(&endpoint(address), &ssl_get(tls, b"secure"), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
        assert_eq!(
            names.recv().await.unwrap().as_deref(),
            Some("www.example.test")
        );
    }

    #[tokio::test]
    async fn verification_accepts_the_right_ca_and_refuses_a_wrong_name() {
        let (address, _names) = tls_server("secure").await;
        let verified = TlsSpec {
            server_name: Some("www.example.test".to_owned()),
            verify: true,
            ca_file: Some(testdata("ca.crt")),
            client_certificate: None,
        };
        let outcome = check(
            &endpoint(address),
            &ssl_get(verified.clone(), b"secure"),
            TIMEOUT,
        )
        .await;
        assert_eq!(outcome, Ok(Success::default()));
        let wrong_name = TlsSpec {
            server_name: Some("other.example.test".to_owned()),
            ..verified
        };
        let outcome = check(&endpoint(address), &ssl_get(wrong_name, b"secure"), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Tls(_))), "{outcome:?}");
    }

    #[tokio::test]
    async fn the_ssl_block_certificate_is_presented_to_servers_that_ask() {
        // A server that requires a client certificate issued by the test CA.
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(testdata("ca.crt")).unwrap())
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(CERTIFICATE).unwrap()],
                PrivateKeyDer::from_pem_slice(KEY).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let mut request = [0u8; 1024];
                    let _ = stream.read(&mut request).await;
                    let _ = stream.write_all(b"HTTP/1.0 200 OK\r\n\r\nsecure").await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        let anonymous = TlsSpec {
            server_name: None,
            verify: false,
            ca_file: None,
            client_certificate: None,
        };
        let outcome = check(
            &endpoint(address),
            &ssl_get(anonymous.clone(), b"secure"),
            TIMEOUT,
        )
        .await;
        assert!(outcome.is_err(), "no client certificate: {outcome:?}");
        let with_certificate = TlsSpec {
            client_certificate: Some((testdata("server.crt"), testdata("server.key"))),
            ..anonymous
        };
        let outcome = check(
            &endpoint(address),
            &ssl_get(with_certificate, b"secure"),
            TIMEOUT,
        )
        .await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn a_plain_http_server_is_a_tls_failure() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let _ = stream.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n").await;
            }
        });
        let tls = TlsSpec {
            server_name: None,
            verify: false,
            ca_file: None,
            client_certificate: None,
        };
        let outcome = check(&endpoint(address), &ssl_get(tls, b""), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Tls(_))), "{outcome:?}");
    }
}
