//! `ragdbeval dataset ...`: list, info, download, make, gt, subset, convert, qrels, make-text.

mod gt;
mod info;
mod make_text;
mod qrels;
mod write;

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::DatasetCommand;
use crate::dataset::{self, download, registry};
use crate::output::progress;

pub fn run(cmd: DatasetCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DatasetCommand::List { data_dir } => info::list(data_dir),
        DatasetCommand::Info {
            target,
            data_dir,
            k,
        } => info::info(&target, data_dir, k),
        DatasetCommand::Download {
            name,
            data_dir,
            quiet,
        } => {
            let known = registry::find(&name).with_context(|| {
                format!("unknown dataset `{name}`; run `ragdbeval dataset list`")
            })?;
            let cache = data_dir.unwrap_or_else(dataset::default_cache_dir);
            let dest = cache.join(known.local());
            if download::missing(known, &cache).is_empty() {
                println!("{} is already cached at {}", known.name, dest.display());
            } else {
                download::download(known, &cache, &*progress::terminal(quiet))?;
                println!("downloaded {} to {}", known.name, dest.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        DatasetCommand::Make(args) => write::make(args),
        DatasetCommand::Gt(args) => gt::gt(args),
        DatasetCommand::Subset(args) => write::subset(args),
        DatasetCommand::Convert(args) => write::convert(args),
        DatasetCommand::Qrels(args) => qrels::qrels(args),
        DatasetCommand::MakeText(args) => make_text::make_text(args),
    }
}
