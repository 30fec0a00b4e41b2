//! Secrets stay in the process: a password or token given in a URL, a connection string or a
//! command line is replaced by [`MASK`] in everything ragdbeval writes or prints (result
//! files, reports, messages, errors). One function, [`redact`], does it for any text; a run
//! that needs the secret again (`bench --resume`) asks the user for it, never a file.
//!
//! What counts as a secret: the password of a URL's user information
//! (`postgres://user:PASSWORD@host/db`, `redis://:PASSWORD@host`), and the value of a
//! password or token keyword in a URL's query (`?password=…`, `?api_key=…`) or in a
//! PostgreSQL `key=value` connection string (`host=h password=…`). User names and hosts are
//! kept: they say what was measured and are not secret. A keyword elsewhere (a filter on an
//! attribute named `token`, `--filter token=5`) is data, and kept: masking it would change
//! what a resumed run measures.

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Keywords whose value is a secret, in URL queries and `key=value` connection strings
/// (compared without case).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "sslpassword",
    "token",
    "access_token",
    "auth_token",
    "api_key",
    "api-key",
    "apikey",
    "secret",
];

/// Keywords that make a run of `key=value` words a PostgreSQL connection string.
const CONNECTION_KEYS: &[&str] = &["host", "hostaddr", "port", "dbname", "user"];

/// `text` with every secret in it replaced by [`MASK`]: the passwords of the URLs it holds
/// (`scheme://user:***@host`) and the values of password and token keywords in their queries
/// and in connection strings. Text without a secret is returned as it is; redacting twice
/// changes nothing.
pub fn redact(text: &str) -> String {
    let urls = redact_urls(text);
    redact_connection_strings(&urls)
}

/// Each of `args` redacted (a command line as the manifest records it).
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter().map(|a| redact(&a)).collect()
}

/// Whether `text` holds a secret that was redacted: a URL password or a keyword value that
/// is [`MASK`]. A run recorded with such a URL needs the secret from the user again.
pub fn is_redacted(text: &str) -> bool {
    text.contains(&format!(":{MASK}@")) || keywords(text).any(|k| k.masked)
}

/// The URL or connection string `url` without its redacted password (and so without any
/// password): what a resumed run connects with when the secret comes from elsewhere.
pub fn without_redacted_password(url: &str) -> String {
    let url = url
        .replace(&format!("://:{MASK}@"), "://")
        .replace(&format!(":{MASK}@"), "@");
    let mut out = String::with_capacity(url.len());
    let mut copied = 0;
    for k in keywords(&url).filter(|k| k.masked) {
        out.push_str(url[copied..k.start].trim_end_matches(['&', ' ']));
        copied = k.end;
    }
    out.push_str(&url[copied..]);
    out.trim()
        .replace("?&", "?")
        .trim_end_matches('?')
        .to_string()
}

/// Characters that end a URL inside free text: those a URL cannot hold (RFC 3986). A `'`
/// can be part of a password, so it does not end one.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '`' | '<' | '>')
}

/// Characters a URL scheme is made of.
fn in_scheme(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// Every `scheme://user:password@host` in `text` with the password masked.
fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let authority_start = at + 3;
        let scheme_start = rest[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| in_scheme(*c))
            .last()
            .map_or(at, |(i, _)| i);
        let len = rest[authority_start..]
            .find(ends_url)
            .unwrap_or(rest.len() - authority_start);
        let url_end = authority_start + len;
        out.push_str(&rest[..scheme_start]);
        if scheme_start == at {
            // No scheme before `://`: not a URL.
            out.push_str(&rest[at..authority_start]);
            rest = &rest[authority_start..];
            continue;
        }
        out.push_str(&redact_url(&rest[scheme_start..url_end]));
        rest = &rest[url_end..];
    }
    out.push_str(rest);
    out
}

/// One URL with its user-information password masked. Only the authority is looked at, so
/// an `@` in a path or query is kept.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:{MASK}@{host}{}", mask_keywords(tail)),
            None => format!("{scheme}://{authority}{}", mask_keywords(tail)),
        },
        None => format!("{scheme}://{authority}{}", mask_keywords(tail)),
    }
}

/// A secret keyword and its value in a text: `key=value`, `key = value` or
/// `key='quoted value'`.
struct Keyword {
    /// Where the key starts.
    start: usize,
    /// Where the value starts and ends (byte offsets).
    value: (usize, usize),
    /// Where the whole `key=value` ends.
    end: usize,
    /// Whether the value is [`MASK`] already.
    masked: bool,
}

/// Every secret keyword with a value in `text`, in order. A key must start a word (after a
/// space, `?`, `&`, `;`, `,` or a bracket), so `notapassword=x` is not one.
fn keywords(text: &str) -> impl Iterator<Item = Keyword> + '_ {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let at = i;
            i += 1;
            // Most bytes start no key: a long document is scanned in one pass.
            if !SECRET_KEYS
                .iter()
                .any(|k| k.as_bytes()[0] == lower.as_bytes()[at])
            {
                continue;
            }
            let starts_word =
                at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            if !starts_word || !text.is_char_boundary(at) {
                continue;
            }
            if let Some(k) = SECRET_KEYS
                .iter()
                .find_map(|key| keyword_at(&lower, text, at, key))
            {
                i = k.end;
                return Some(k);
            }
        }
        None
    })
}

/// The keyword `key` with its value at `at` in `text` (`lower` is it in lowercase), when
/// `key=value` is written there.
fn keyword_at(lower: &str, text: &str, at: usize, key: &str) -> Option<Keyword> {
    let after_key = at + key.len();
    if !lower[at..].starts_with(key) || !text.is_char_boundary(after_key) {
        return None;
    }
    let value = text[after_key..]
        .trim_start_matches(' ')
        .strip_prefix('=')?
        .trim_start_matches(' ');
    let start = text.len() - value.len();
    let len = match value.strip_prefix('\'') {
        // libpq's quoting: `'…'`, with `\'` and `\\` inside.
        Some(quoted) => {
            let mut escaped = false;
            let close = quoted.char_indices().find(|&(_, c)| {
                let closes = c == '\'' && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            });
            close.map_or(value.len(), |(i, _)| i + 2)
        }
        None => value
            .find(|c: char| ends_url(c) || matches!(c, '&' | '#' | ';' | ',' | ')' | '}'))
            .unwrap_or(value.len()),
    };
    (len > 0).then(|| Keyword {
        start: at,
        value: (start, start + len),
        end: start + len,
        masked: &value[..len] == MASK,
    })
}

/// Every secret keyword's value in `text` masked.
fn mask_keywords(text: &str) -> String {
    mask_keywords_where(text, |_| true)
}

/// The secret keywords' values masked where they belong to a connection string: within the
/// same line or quoted string as a connection keyword (`host=`, `dbname=`, `user=`, …).
fn redact_connection_strings(text: &str) -> String {
    mask_keywords_where(text, |k| {
        let bytes = text.as_bytes();
        let bound = |b: &u8| matches!(b, b'"' | b'\n');
        let start = bytes[..k.start]
            .iter()
            .rposition(bound)
            .map_or(0, |i| i + 1);
        let end = bytes[k.end..]
            .iter()
            .position(bound)
            .map_or(text.len(), |i| k.end + i);
        let segment = text[start..end].replace(" = ", "=");
        CONNECTION_KEYS
            .iter()
            .any(|key| words_assigned(&segment).any(|w| w.eq_ignore_ascii_case(key)))
    })
}

/// The keys of the `key=value` words of `text` (both of `--url=host=h`), without what
/// precedes them (`(host=h` has the key `host`).
fn words_assigned(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == '\'')
        .flat_map(|w| {
            let parts = w.split('=').count();
            w.split('=').take(parts - 1)
        })
        .map(|key| key.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()))
}

/// The values of the secret keywords `applies` accepts masked.
fn mask_keywords_where(text: &str, applies: impl Fn(&Keyword) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for k in keywords(text).filter(|k| !k.masked && applies(k)) {
        out.push_str(&text[copied..k.value.0]);
        out.push_str(MASK);
        copied = k.value.1;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_masked_and_the_rest_kept() {
        let cases = [
            (
                "postgresql://user:secret@host/db",
                "postgresql://user:***@host/db",
            ),
            ("redis://:pw@h:6379", "redis://:***@h:6379"),
            ("https://u:secret@h:1/p", "https://u:***@h:1/p"),
            (
                "postgres://user@host:5432/db",
                "postgres://user@host:5432/db",
            ),
            ("http://h:1/a@b", "http://h:1/a@b"),
            ("http://h:1/a:b@c", "http://h:1/a:b@c"),
            ("redis://u:it's@h", "redis://u:***@h"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("not a url", "not a url"),
            ("://x:y@z", "://x:y@z"),
            (
                "https://h/p?api_key=abc&x=1#f",
                "https://h/p?api_key=***&x=1#f",
            ),
            (
                "postgres://u@h/db?sslmode=disable&password=pw",
                "postgres://u@h/db?sslmode=disable&password=***",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(redact(given), want, "{given}");
            assert_eq!(redact(want), want, "twice: {want}");
        }
    }

    #[test]
    fn secrets_inside_messages_and_connection_strings() {
        assert_eq!(
            redact("cannot reach postgres://u:s3cr3t@10.0.0.1/db (connection refused); retry"),
            "cannot reach postgres://u:***@10.0.0.1/db (connection refused); retry"
        );
        assert_eq!(
            redact("--url=\"redis://:pw@h\" and 'https://a:b@c'"),
            "--url=\"redis://:***@h\" and 'https://a:***@c'"
        );
        assert_eq!(
            redact("host=127.0.0.1 user=postgres password=secret dbname=x"),
            "host=127.0.0.1 user=postgres password=*** dbname=x"
        );
        assert_eq!(
            redact("host=h PASSWORD = 'se cr\\'et' dbname=x"),
            "host=h PASSWORD = *** dbname=x"
        );
        assert_eq!(redact("(host=h, token=abc)"), "(host=h, token=***)");
        assert_eq!(
            redact("user=ü password=ö x\ntoken=t"),
            "user=ü password=*** x\ntoken=t"
        );
        assert_eq!(
            redact("host=h notapassword=x pwdx=1"),
            "host=h notapassword=x pwdx=1"
        );
        assert_eq!(redact("host=h password="), "host=h password=");
        // Outside a URL or a connection string a keyword is data (an attribute filter).
        for data in [
            "token=5",
            "--filter secret=a",
            "[\"--filter\", \"pwd=1\", \"host\"]",
        ] {
            assert_eq!(redact(data), data);
        }
    }

    #[test]
    fn command_lines_are_redacted_argument_by_argument() {
        let argv = [
            "ragdbeval",
            "bench",
            "--url",
            "postgresql://u:pw@h/db",
            "--filter",
            "token=5",
            "--url=host=h password=pw",
        ];
        assert_eq!(
            redact_args(argv.iter().map(|s| s.to_string())),
            [
                "ragdbeval",
                "bench",
                "--url",
                "postgresql://u:***@h/db",
                "--filter",
                "token=5",
                "--url=host=h password=***"
            ]
        );
    }

    #[test]
    fn a_redacted_url_is_recognised_and_loses_its_password() {
        assert!(is_redacted("postgresql://u:***@h/db"));
        assert!(is_redacted("redis://:***@h"));
        assert!(is_redacted("host=h password=*** dbname=x"));
        assert!(!is_redacted("postgresql://u@h/db"));
        assert!(!is_redacted("postgresql://u:pw@h/db"));
        assert_eq!(
            without_redacted_password("postgresql://u:***@h/db"),
            "postgresql://u@h/db"
        );
        assert_eq!(without_redacted_password("redis://:***@h"), "redis://h");
        assert_eq!(
            without_redacted_password("postgres://u@h/db?sslmode=disable&password=***"),
            "postgres://u@h/db?sslmode=disable"
        );
        assert_eq!(
            without_redacted_password("postgres://u@h/db?password=***&sslmode=disable"),
            "postgres://u@h/db?sslmode=disable"
        );
        assert_eq!(
            without_redacted_password("host=h password=*** dbname=x"),
            "host=h dbname=x"
        );
    }
}
