//! The arguments of the two search calls, [`Query`] and [`Batch`], with the checks every
//! engine makes before it searches, so that each adapter starts a search with one call and
//! every engine words a bad query the same way.

use std::collections::BTreeMap;

use super::EngineResult;
use super::rows;
use crate::filter::Predicate;

/// One top-`k` search: the query vector and, when given, the predicate every result passes.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub vector: &'a [f32],
    pub k: usize,
    pub filter: Option<&'a Predicate>,
}

impl<'a> Query<'a> {
    /// An unfiltered search.
    pub fn new(vector: &'a [f32], k: usize) -> Self {
        Query {
            vector,
            k,
            filter: None,
        }
    }

    /// The same search among the points that pass `filter`.
    pub fn filtered(self, filter: Option<&'a Predicate>) -> Self {
        Query { filter, ..self }
    }

    /// What the call is named in messages: `search`, or `filtered search`.
    pub fn operation(&self) -> &'static str {
        if self.filter.is_some() {
            "filtered search"
        } else {
            "search"
        }
    }

    /// Checks that the vector has the collection's dimension `dim`.
    pub fn check(&self, engine: &str, dim: usize) -> EngineResult<()> {
        rows::check(engine, self.operation(), dim, 1, self.vector.len())
    }

    /// The start of a search into a reused buffer: empties `out`, checks the dimension, and
    /// answers whether there is anything to search (`k > 0`).
    pub fn start<T>(&self, engine: &str, dim: usize, out: &mut Vec<T>) -> EngineResult<bool> {
        out.clear();
        self.check(engine, dim)?;
        Ok(self.k > 0)
    }
}

/// Many searches in one call: `rows` holds the query vectors, `dim` floats each; with
/// `filters`, `filters[i]` is the predicate of query `i`.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    pub rows: &'a [f32],
    pub dim: usize,
    pub k: usize,
    pub filters: Option<&'a [Predicate]>,
}

impl<'a> Batch<'a> {
    /// An unfiltered batch.
    pub fn new(rows: &'a [f32], dim: usize, k: usize) -> Self {
        Batch {
            rows,
            dim,
            k,
            filters: None,
        }
    }

    /// The same batch, query `i` among the points that pass `filters[i]`.
    pub fn filtered(self, filters: Option<&'a [Predicate]>) -> Self {
        Batch { filters, ..self }
    }

    /// What the call is named in messages: `batch search`, or `filtered batch search`.
    pub fn operation(&self) -> &'static str {
        if self.filters.is_some() {
            "filtered batch search"
        } else {
            "batch search"
        }
    }

    /// The number of queries: one per predicate when filtered, else one per whole row.
    pub fn len(&self) -> usize {
        self.filters
            .map_or(self.rows.len() / self.dim.max(1), <[_]>::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks that the rows are [`Batch::len`] whole vectors of the collection's dimension
    /// `collection_dim`, and answers how many queries there are.
    pub fn check(&self, engine: &str, collection_dim: usize) -> EngineResult<usize> {
        let nq = self.len();
        let op = self.operation();
        rows::check_batch(engine, op, collection_dim, self.dim, nq, self.rows.len())?;
        Ok(nq)
    }

    /// Query `i` of the batch.
    pub fn query(&self, i: usize) -> Query<'a> {
        Query {
            vector: &self.rows[i * self.dim..(i + 1) * self.dim],
            k: self.k,
            filter: self.filters.map(|f| &f[i]),
        }
    }

    /// The batch's queries in order (as many as whole rows and, when filtered, predicates).
    pub fn queries(&self) -> impl Iterator<Item = Query<'a>> + use<'a> {
        let batch = *self;
        let whole = self.rows.len() / self.dim.max(1);
        (0..self.len().min(whole)).map(move |i| batch.query(i))
    }

    /// For the engines whose search call takes many queries but one predicate: the queries
    /// that share a predicate (a label, a tenant; all of them when unfiltered) go to `search`
    /// together, `per_call` at the most, and the answers are put back in query order. The
    /// batch must have passed [`Batch::check`].
    pub fn by_predicate<N: Clone>(
        &self,
        per_call: usize,
        mut search: impl FnMut(&[f32], Option<&'a Predicate>) -> EngineResult<Vec<Vec<N>>>,
    ) -> EngineResult<Vec<Vec<N>>> {
        let mut groups: BTreeMap<Option<&Predicate>, Vec<usize>> = BTreeMap::new();
        for q in 0..self.len() {
            groups
                .entry(self.filters.map(|f| &f[q]))
                .or_default()
                .push(q);
        }
        let mut out = vec![Vec::new(); self.len()];
        for (predicate, members) in groups {
            for part in members.chunks(per_call.max(1)) {
                let answers = search(&self.gather_rows(part), predicate)?;
                for (q, answer) in part.iter().zip(answers) {
                    out[*q] = answer;
                }
            }
        }
        Ok(out)
    }

    /// The rows of queries `members` (ascending), borrowed when they are one contiguous run
    /// (every unfiltered batch), else copied together.
    fn gather_rows(&self, members: &[usize]) -> std::borrow::Cow<'a, [f32]> {
        let dim = self.dim;
        match (members.first(), members.last()) {
            (Some(&first), Some(&last)) if last - first + 1 == members.len() => {
                std::borrow::Cow::Borrowed(&self.rows[first * dim..(last + 1) * dim])
            }
            _ => members
                .iter()
                .flat_map(|q| &self.rows[q * dim..(q + 1) * dim])
                .copied()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{Condition, Predicate};

    fn label(value: &str) -> Predicate {
        Predicate::from(Condition::equals("label", value))
    }

    #[test]
    fn a_search_starts_empty_and_stops_at_k_zero() {
        let mut out = vec![1, 2];
        assert!(Query::new(&[0.0, 1.0], 3).start("e", 2, &mut out).unwrap());
        assert!(out.is_empty());
        assert!(!Query::new(&[0.0, 1.0], 0).start("e", 2, &mut out).unwrap());
        let err = Query::new(&[0.0, 1.0], 3).start("e", 3, &mut out);
        assert!(err.unwrap_err().to_string().contains("search"));
    }

    #[test]
    fn a_batch_counts_its_queries_and_checks_both_dimensions() {
        let rows = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let batch = Batch::new(&rows, 2, 5);
        assert_eq!(batch.check("e", 2).unwrap(), 3);
        assert_eq!(batch.queries().count(), 3);
        assert_eq!(batch.query(2).vector, &[4.0, 5.0]);
        assert!(batch.check("e", 3).is_err());
        assert!(Batch::new(&rows[..5], 2, 5).check("e", 2).is_err());
        let filters = [label("a"), label("b")];
        let filtered = batch.filtered(Some(&filters));
        assert_eq!(filtered.operation(), "filtered batch search");
        let err = filtered.check("e", 2).unwrap_err().to_string();
        assert!(err.contains("2 vectors of dimension 2"), "{err}");
    }

    #[test]
    fn queries_sharing_a_predicate_go_together_and_come_back_in_order() {
        let rows = [0.0, 1.0, 2.0, 3.0, 4.0];
        let filters = [label("a"), label("b"), label("a"), label("a"), label("b")];
        let batch = Batch::new(&rows, 1, 1).filtered(Some(&filters));
        let mut calls = Vec::new();
        let out = batch
            .by_predicate(2, |part, predicate| {
                calls.push((part.to_vec(), predicate.cloned()));
                Ok(part.iter().map(|x| vec![*x]).collect())
            })
            .unwrap();
        assert_eq!(out, [[0.0], [1.0], [2.0], [3.0], [4.0]]);
        let groups: Vec<Vec<f32>> = calls.iter().map(|(rows, _)| rows.clone()).collect();
        assert_eq!(groups, [vec![0.0, 2.0], vec![3.0], vec![1.0, 4.0]]);
        assert_eq!(calls[0].1, Some(label("a")));
    }
}
