// The engines with lexical retrieval (`bench --retrieval sparse|hybrid`): sparse vectors, or
// text they analyse themselves, alone or fused with their dense search. `beside_dense`: a
// dense engine of `engines.rs` whose folder also has `hybrid.rs` (`SUMMARY`, `open`);
// `lexical_only`: an engine with no dense side, its folder's `mod.rs` holding `SUMMARY` and
// `open`. One line per engine, in the order `ragdbeval engines` lists them.
lexical_engines! {
    beside_dense: [
        exact => "exact",
        #[cfg(feature = "qdrant-edge")]
        qdrant_edge => "qdrant-edge",
        #[cfg(feature = "pgvector")]
        pgvector => "pgvector",
    ]
    lexical_only: [
        bm25 => "bm25",
    ]
}
