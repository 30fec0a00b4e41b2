//! `ragdbeval compare A.json B.json`: two runs compared query by query.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::CompareArgs;
use crate::export::compare as render;
use crate::results::compare::compare;

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let comparison = compare(&args.a, &args.b, &args.pairs, args.alpha)?;
    let format = if args.json {
        "json"
    } else {
        args.format.as_str()
    };
    if let Some(rules) = &args.fail_on {
        return gate(&args, &comparison, &rules.0, format);
    }
    let text = match format {
        "text" => render::text(&comparison),
        "md" | "markdown" => render::markdown(&comparison),
        "json" => serde_json::to_string_pretty(&comparison)? + "\n",
        "html" => render::html(&comparison),
        other => bail!("unknown format `{other}`: use text, md, json or html"),
    };
    match &args.out {
        Some(path) => crate::atomic::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--fail-on`: the rules on every compared pair, one line each; exit 1 when one fails.
fn gate(
    args: &CompareArgs,
    comparison: &crate::results::compare::Comparison,
    rules: &[crate::results::gate::Rule],
    format: &str,
) -> anyhow::Result<ExitCode> {
    if comparison.pairs.is_empty() {
        bail!(
            "{} and {} cannot be compared query by query ({}): nothing to gate",
            args.a.display(),
            args.b.display(),
            comparison.not_comparable.join("; ")
        );
    }
    let lines = crate::results::gate::check(comparison, rules);
    let text = match format {
        "json" => serde_json::to_string_pretty(&lines)? + "\n",
        "text" => crate::export::gate::text(&lines),
        other => bail!("--fail-on writes text or json, not `{other}`"),
    };
    match &args.out {
        Some(path) => crate::atomic::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{text}"),
    }
    let failed = lines.iter().any(|l| l.failed);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
