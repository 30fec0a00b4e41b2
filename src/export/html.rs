//! The pieces both HTML outputs (`compare --format html` and the report's `index.html`) are
//! made of: escaping and a table. Neither page has a script or loads anything.

use std::fmt::Write as _;

/// Text as HTML text or attribute value.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A table; a data cell starting with "INVALID" gets `class="invalid"` (the pages style it).
pub fn table(out: &mut String, header: &[impl AsRef<str>], rows: &[Vec<String>]) {
    out.push_str("<table><thead><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h.as_ref()));
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let class = if c.starts_with("INVALID") {
                " class=\"invalid\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}
