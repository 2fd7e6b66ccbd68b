//! The two HTTP/1.1 requests of the tang protocol (`GET /adv`, `POST /rec/KID`), through
//! `ureq` without TLS (tang's exchange needs no transport security: the server learns
//! nothing and a listener learns nothing), with a time limit per exchange and a cap on the
//! body size.

use crate::TangError;
use std::time::Duration;

/// Caps on one HTTP exchange with a tang server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time for the whole exchange (connect, send, receive).
    pub timeout: Duration,
    /// Largest response body accepted.
    pub max_body: u64,
}

fn agent(limits: &Limits) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(limits.timeout))
        .max_redirects(0)
        .max_response_header_size(64 * 1024)
        .http_status_as_error(false)
        .build()
        .into()
}

fn err(url: &str, e: ureq::Error) -> TangError {
    let reason = match e {
        ureq::Error::Timeout(_) => "no answer in time".to_string(),
        ureq::Error::Io(e) => e.to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::BodyExceedsLimit(n) => format!("reply longer than {n} bytes"),
        other => other.to_string(),
    };
    TangError::Http {
        url: url.to_string(),
        reason,
    }
}

fn check_url(url: &str) -> Result<(), TangError> {
    if url.starts_with("http://") {
        Ok(())
    } else {
        Err(TangError::Http {
            url: url.to_string(),
            reason: "only http:// URLs are supported".to_string(),
        })
    }
}

fn body(
    url: &str,
    mut r: ureq::http::Response<ureq::Body>,
    limits: &Limits,
) -> Result<Vec<u8>, TangError> {
    let status = r.status().as_u16();
    if status != 200 {
        return Err(TangError::Http {
            url: url.to_string(),
            reason: format!("HTTP status {status}"),
        });
    }
    r.body_mut()
        .with_config()
        .limit(limits.max_body)
        .read_to_vec()
        .map_err(|e| err(url, e))
}

/// GET `url`: the body of a 200 reply.
pub fn get(url: &str, limits: &Limits) -> Result<Vec<u8>, TangError> {
    check_url(url)?;
    let r = agent(limits).get(url).call().map_err(|e| err(url, e))?;
    body(url, r, limits)
}

/// POST `data` to `url`: the body of a 200 reply.
pub fn post(
    url: &str,
    content_type: &str,
    data: &[u8],
    limits: &Limits,
) -> Result<Vec<u8>, TangError> {
    check_url(url)?;
    let r = agent(limits)
        .post(url)
        .header("Content-Type", content_type)
        .send(data)
        .map_err(|e| err(url, e))?;
    body(url, r, limits)
}
