//! URLs in messages and result files never show credentials.

/// `scheme://user:password@host/...` → `scheme://***@host/...`; other URLs unchanged. Only
/// the authority is looked at, so an `@` in a path or query is kept.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{tail}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_credentials_only() {
        assert_eq!(redact("https://u:secret@h:1/p"), "https://***@h:1/p");
        assert_eq!(redact("redis://u:secret@h:1"), "redis://***@h:1");
        assert_eq!(redact("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("not a url"), "not a url");
    }
}
