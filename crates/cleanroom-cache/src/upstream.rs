//! The registries themselves, over HTTPS (rustls with ring), trusting the
//! system's certificate store (a TLS-intercepting proxy's CA may be only
//! there). Only the cache's own code names what to fetch: a registry's
//! fixed address and a path the agent's request supplied, checked first.

use std::time::Duration;

use cleanroom_model::client::system_tls;

pub struct Upstream {
    agent: ureq::Agent,
}

pub type Answer = ureq::http::Response<ureq::Body>;

impl Upstream {
    pub fn new() -> Result<Upstream, String> {
        let agent = ureq::Agent::config_builder()
            .tls_config(system_tls()?)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_recv_response(Some(Duration::from_secs(60)))
            // A stalled body: the environment's client gives up too.
            .timeout_recv_body(None)
            .user_agent(concat!("cleanroom-cache/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(Upstream { agent })
    }

    /// GET `url` with these request headers; any status is an answer.
    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Answer, String> {
        let mut request = self.agent.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.call().map_err(|e| format!("{url}: {e}"))
    }
}

/// A header of an answer, as text.
pub fn header<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
    answer.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The length an answer announces.
pub fn length(answer: &Answer) -> Option<u64> {
    header(answer, "content-length").and_then(|l| l.parse().ok())
}
