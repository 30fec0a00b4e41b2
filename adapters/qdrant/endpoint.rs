//! The server address: parsing `--url` into host and port, and redacting credentials for messages.

/// Scheme, host and port of the server URL (for TLS, messages and PID lookup).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Endpoint {
    pub(super) https: bool,
    pub(super) host: String,
    pub(super) port: u16,
}

impl Endpoint {
    /// Parses `http(s)://host[:port][/...]`. A missing port is what the gRPC transport would
    /// use (80/443), not 6334: the URL is passed to the client unchanged.
    pub(super) fn parse(url: &str) -> Result<Endpoint, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "expected http://HOST:PORT or https://HOST:PORT".to_string())?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => return Err(format!("unsupported scheme `{other}`: use http or https")),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| "unclosed `[` in IPv6 address".to_string())?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err("no host".to_string());
        }
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| format!("bad port `{p}`"))?,
            None if https => 443,
            None => 80,
        };
        Ok(Endpoint {
            https,
            host: host.to_string(),
            port,
        })
    }

    /// True when the server runs on this machine, so its PID can be looked up.
    pub(super) fn is_local(&self) -> bool {
        let h = self.host.to_ascii_lowercase();
        h == "localhost" || h == "::1" || h == "0.0.0.0" || h.starts_with("127.")
    }
}
