//! `ragdbeval compare A.json B.json`: two runs compared query by query.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::CompareArgs;
use crate::export::compare as render;
use crate::results::compare::compare;

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let comparison = compare(&args.a, &args.b, &args.pairs, args.alpha)?;
    let text = match args.format.as_str() {
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
