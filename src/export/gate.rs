//! The regression gate's lines as text (`compare --fail-on`): one line per rule and pair of
//! steps, `FAIL` or `ok` first, so that `grep FAIL` finds what broke.

use crate::results::gate::GateLine;

/// One line per checked rule: `FAIL` or `ok`, the steps, A → B, the change, the test.
pub fn text(lines: &[GateLine]) -> String {
    let mut out = String::new();
    for l in lines {
        let change = if l.rule.ends_with('%') {
            format!("{:+.1} %", l.change * 100.0)
        } else {
            format!("{:+.4}", l.change)
        };
        let test = match l.significant {
            None => "no test (one figure per run)",
            Some(true) => "significant",
            Some(false) => "not significant",
        };
        out.push_str(&format!(
            "{:<4}  {:<12} step {}:{}  {:.4} -> {:.4}  {change}  {test}\n",
            if l.failed { "FAIL" } else { "ok" },
            l.rule,
            l.pair.0,
            l.pair.1,
            l.a,
            l.b,
        ));
    }
    out
}
