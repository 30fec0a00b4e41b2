//! `ragdbeval engines`: what can be benchmarked and with which parameter sets.

use std::process::ExitCode;

use anyhow::Context;

use crate::adapters::{ENGINES, LEXICAL};
use crate::params::{EngineConfig, expand};

pub fn run() -> anyhow::Result<ExitCode> {
    for e in ENGINES {
        let kind = if e.embedded() { "embedded" } else { "server" };
        match e.left_out {
            None => println!("{:<12} [{kind}] {}", e.name, e.summary()),
            Some(feature) => println!(
                "{:<12} [{kind}] {}; not in this build: cargo feature `{feature}`",
                e.name,
                e.summary()
            ),
        }
        let cfg = EngineConfig::parse(e.config_toml)
            .with_context(|| format!("config of engine {}", e.name))?;
        for (name, set) in &cfg.sets {
            let points = expand(&set.build).len() * expand(&set.search).len();
            println!(
                "    --set {name:<16} {} ({points} configuration{})",
                set.description.as_deref().unwrap_or(""),
                if points == 1 { "" } else { "s" }
            );
        }
    }
    println!();
    println!("lexical retrieval (--retrieval sparse, and hybrid beside a dense side):");
    for e in LEXICAL {
        println!("{:<12} {}", e.name, e.summary);
    }
    Ok(ExitCode::SUCCESS)
}
