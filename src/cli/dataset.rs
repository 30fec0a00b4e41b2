//! Arguments of `ragdbeval dataset` and its subcommands.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{DatasetSource, parse_count};

pub(super) const DATASET_EXAMPLES: &str = "\
Examples:
  ragdbeval dataset list
  ragdbeval dataset download sift1m
  ragdbeval dataset info bigann-10M
      Format, element type, sizes, source and each file's URL and cache path; bigann-10M
      downloads 1.28 GB of the 1B file (an HTTP range) and rewrites its header.
  ragdbeval dataset info datasets/cache/sift-128-euclidean.hdf5
  ragdbeval dataset make --kind clustered -n 100000 --dim 128 --out data/c100k.hdf5
  ragdbeval dataset gt --dataset data/c100k.hdf5 -k 100 --out data/c100k-gt.hdf5
  ragdbeval dataset subset --dataset sift1m --limit 100000 --out data/sift100k.hdf5
  ragdbeval dataset convert --dataset sift1m --limit 100000 --to fbin --out data/sift100k
      A big-ann-benchmarks directory: base.fbin, query.fbin, gt.ibin (ids and distances).
  ragdbeval dataset convert --dataset data/bigann-10M --max-queries 1000 --to hdf5 --out b.hdf5
      A big-ann-benchmarks directory (base.*.u8bin, query.*.u8bin, GT*.ibin) as ann-benchmarks HDF5.
  ragdbeval dataset gt --dataset sift1m --runbook default -k 100
  ragdbeval dataset qrels --dataset sift1m -k 10 --out sift-k10.qrels
      The 10 true nearest neighbours of each query as TREC qrels, to score a
      `bench --runbook build-search --trec-run` file with `ragdbeval eval` or trec_eval.
  ragdbeval dataset qrels --dataset sift1m --runbook default --out steps.qrels
      The truth of each search step of the default runbook: steps.1.qrels, ...
  ragdbeval dataset make-text manpages --model \"$(scripts/install/minilm.sh)\"
      A known-item retrieval set from this machine's man pages, embedded, with judgments
      (`ragdbeval dataset make-text --help` gives the construction).";

const CONVERT_EXAMPLES: &str = "\
Examples:
  ragdbeval dataset convert --dataset sift1m --limit 100000 --to fbin --out data/sift100k
      data/sift100k/base.fbin, query.fbin and gt.ibin (ids and distances, recomputed for
      the 100k kept vectors), the big-ann-benchmarks layout.
  ragdbeval dataset convert --dataset data/sift100k --to u8bin --out data/sift100k-u8
      SIFT's components are integers in 0..=255: the same vectors as uint8.
  ragdbeval dataset convert --dataset data/bigann-10M --max-queries 1000 --to hdf5 --out b.hdf5
  ragdbeval dataset convert --dataset glove-100 --to vdbbench --out data/glove_vdb
      A VectorDBBench directory: train.parquet, test.parquet, neighbors.parquet (no metric
      stored: load it with --distance angular, as convert says).";

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Known datasets with dimension, size, distance and whether they are cached.
    List {
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Layout, counts, distance and ground-truth depth of a file, directory or name, and the
    /// distribution of its queries' difficulty (relative contrast and local intrinsic
    /// dimensionality at k, as VIBE computes them).
    Info {
        /// File, TEXMEX or big-ann-benchmarks directory, registry name or gen: spec.
        target: String,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Neighbours the difficulty figures look at (VIBE reports k = 10).
        #[arg(short = 'k', long, default_value_t = 10, value_parser = parse_count)]
        k: usize,
    },
    /// Download a registry dataset into the cache (resumes a partial download).
    Download {
        name: String,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Write a synthetic dataset with exact ground truth in the ann-benchmarks layout.
    Make(MakeArgs),
    /// Compute exact top-k ground truth for a dataset and write it with its vectors.
    Gt(GtArgs),
    /// Keep the first N train vectors and recompute the ground truth.
    Subset(SubsetArgs),
    /// Write any dataset (after --limit / --max-queries) as a big-ann-benchmarks directory
    /// (base.<ext>, query.<ext>, gt.ibin) or an ann-benchmarks HDF5 file.
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(ConvertArgs),
    /// Write the exact ground truth as TREC qrels (`qid 0 docid 1`: each query's k true
    /// nearest neighbours), with the qid and docid of `bench --trec-run`.
    Qrels(QrelsArgs),
    /// Build a known-item retrieval set from real text on this machine (its man pages, or
    /// Debian's package descriptions): a query is an item's one-line description, its one
    /// relevant document the item's text.
    /// Writes a BEIR directory, then embeds it (cargo feature `embed` and a model).
    #[command(after_help = MAKE_TEXT_EXAMPLES)]
    MakeText(MakeTextArgs),
}

const MAKE_TEXT_EXAMPLES: &str = "\
Construction (known-item retrieval, written to OUT/beir/construction.json with every count):
  manpages         document: a page's DESCRIPTION section (else its sections after NAME and
                   SYNOPSIS) as groff renders it for a terminal; query: its NAME line after
                   the dash (`ls - list directory contents`).
  debian-packages  document: a package's long description; query: its synopsis. Read from
                   apt's Translation-en files, fetched with `apt-get update -o
                   Acquire::Languages=en` when missing.
  Texts are whitespace-collapsed and cut to --words words; each query judges its own item
  relevant (grade 1; every window of it once embedded).
Left out: symbolic links and `.so` redirects, items without a description or with an empty
text, items whose text repeats another's. Not queries: descriptions shared by several items,
and lexical ones, which name their item as a word or appear in its text (kept and flagged
`lexical` with --keep-lexical). Then --queries are drawn with --seed.

Output: OUT/beir (corpus.jsonl, queries.jsonl, qrels/test.tsv: what `embed --beir` reads) and
OUT/embedded (the dataset `bench --dataset` runs: vectors, exact truth, qrels.txt). A second
run with the same parameters reuses what is there.

Examples:
  ragdbeval dataset make-text manpages --model \"$(scripts/install/minilm.sh)\"
      datasets/cache/manpages/embedded, from every page of /usr/share/man sections 1-8.
  ragdbeval dataset make-text debian-packages --model \"$(scripts/install/minilm.sh)\"
      datasets/cache/debian-packages/embedded: 10,000 packages drawn, 2,000 queries.
  ragdbeval bench --db qdrant-edge --dataset datasets/cache/manpages/embedded --set ef-sweep
      ANN recall and task NDCG@10 against the pages' judgments, per setting.";

/// Text sources `dataset make-text` builds from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextSource {
    /// The man pages under --man-dir, rendered by groff.
    Manpages,
    /// Debian's package descriptions (apt's English translation files).
    DebianPackages,
}

#[derive(Debug, Args)]
pub struct MakeTextArgs {
    pub source: TextSource,
    /// Output directory [default: <data dir>/<source>].
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// The dataset cache the default output lives in [default: $RAGDBEVAL_DATA_DIR, else
    /// datasets/cache].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The man directory holding man1, man2, ...
    #[arg(long, default_value = "/usr/share/man")]
    pub man_dir: PathBuf,
    /// Sections to read, comma-separated.
    #[arg(long, default_value = "1,8,2,3,4,5,6,7", value_delimiter = ',')]
    pub sections: Vec<String>,
    /// apt's lists directory, holding the *_i18n_Translation-en* files (debian-packages).
    #[arg(long, default_value = "/var/lib/apt/lists")]
    pub apt_lists: PathBuf,
    /// Words of an item's text kept as its document.
    #[arg(long, default_value_t = 120, value_parser = parse_count)]
    pub words: usize,
    /// Items drawn (with --seed) before the rule applies [default: all man pages; 10000
    /// packages].
    #[arg(long, value_parser = parse_count)]
    pub items: Option<usize>,
    /// Queries drawn from the candidates.
    #[arg(long, default_value_t = 2000, value_parser = parse_count)]
    pub queries: usize,
    /// Seed of the query draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep lexical queries (flagged `lexical` in queries.jsonl) instead of leaving them out.
    #[arg(long)]
    pub keep_lexical: bool,
    /// A sentence-transformers model folder to embed with [default: $RAGDBEVAL_EMBED_MODEL];
    /// without one, only the BEIR directory is written and the embed command is printed.
    #[arg(long)]
    pub model: Option<PathBuf>,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct QrelsArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// True neighbours per query judged relevant (bench's --relevant, which defaults to -k;
    /// at most 1000).
    #[arg(short = 'k', long, default_value_t = 10, value_parser = parse_count)]
    pub k: usize,
    /// The truth of every search step of this runbook (`default`, `build-search` or a TOML
    /// file), as `bench` scores them, one qrels file per search step numbered like
    /// `--trec-run` files (q.qrels → q.1.qrels, ...; one search step: the file itself).
    /// Without it: the whole dataset's truth (what `--runbook build-search` searches).
    #[arg(long)]
    pub runbook: Option<String>,
    /// Output qrels file (written atomically).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct MakeArgs {
    /// `uniform` or `clustered` (Gaussian blobs).
    #[arg(long, default_value = "clustered")]
    pub kind: String,
    /// Train vectors.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub n: usize,
    #[arg(long, default_value_t = 128)]
    pub dim: usize,
    /// Test (query) vectors.
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// euclidean, angular or dot.
    #[arg(long, default_value = "euclidean")]
    pub distance: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of clusters (clustered kind).
    #[arg(long, default_value_t = 32)]
    pub clusters: usize,
    /// Ground-truth depth.
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct GtArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Precompute and cache the ground truth of every search step of this runbook (`default`,
    /// `build-search` or a TOML file) instead of writing a dataset file.
    #[arg(long)]
    pub runbook: Option<String>,
    /// Ground-truth depth (at most 1000).
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    /// The exact top-k by dot product of the dataset's sparse vectors (its `sparse/` folder)
    /// instead, written to --out in big-ann-benchmarks' ground-truth format (ids, then the
    /// distances `−score`; fewer than k overlapping rows padded with id −1).
    #[arg(long, conflicts_with = "runbook")]
    pub sparse: bool,
    /// With --runbook: also the filtered truth of these filters, as `bench --filter` makes
    /// them (same options, same cache), timed on its own.
    #[arg(long = "filter", value_name = "FILTER", requires = "runbook")]
    pub filters: Vec<String>,
    /// See `bench --filter-sweep`.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "FRACTIONS", requires = "runbook")]
    pub filter_sweep: Option<String>,
    /// See `bench --filter-correlation`.
    #[arg(long, default_value = "none", value_name = "none|positive|negative")]
    pub filter_correlation: String,
    /// See `bench --filter-seed`.
    #[arg(long, default_value_t = 42)]
    pub filter_seed: u64,
    /// See `bench --attributes`.
    #[arg(long, value_name = "FILE.jsonl|FILE.parquet")]
    pub attributes: Option<PathBuf>,
    /// Output HDF5 file (train, test and the new neighbors/distances); required without
    /// --runbook.
    #[arg(long, short = 'o', required_unless_present = "runbook")]
    pub out: Option<PathBuf>,
    /// Write the output's vectors first and compute the truth after, so that the time
    /// printed is the truth's alone (for holding it against a bare matrix product). By
    /// default the vectors are written while the truth is computed: the command ends sooner,
    /// but the writing shares the cores with the truth (1-3 % of its time at 200k × 128 on
    /// two cores).
    #[arg(long, conflicts_with = "runbook")]
    pub write_first: bool,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SubsetArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Ground-truth depth to compute for the subset.
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The layouts `dataset convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// big-ann-benchmarks directory of float32 vectors.
    Fbin,
    /// big-ann-benchmarks directory of uint8 vectors (every component an integer in 0..=255).
    U8bin,
    /// big-ann-benchmarks directory of int8 vectors (every component an integer in -128..=127).
    I8bin,
    /// ann-benchmarks HDF5 file (train, test, neighbors, distances, attribute distance).
    Hdf5,
    /// VectorDBBench directory (train.parquet, test.parquet, neighbors.parquet; no metric).
    Vdbbench,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Output layout. fbin, u8bin and i8bin write a directory holding base.<ext>, query.<ext>
    /// and gt.ibin; u8bin and i8bin refuse (writing nothing) vectors whose components are not
    /// integers in the type's range.
    #[arg(long, value_enum)]
    pub to: ConvertFormat,
    /// Ground-truth depth when it is computed (the source has none, or --limit drops it).
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    /// Output: a new directory for fbin/u8bin/i8bin/vdbbench (or an empty one), a file for
    /// hdf5.
    /// Written under a temporary name and renamed, so a failure leaves nothing.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
