//! Unit tests of the parent module.

use super::*;
use crate::types::PointId;

fn parse(text: &str) -> Runbook {
    Runbook::parse_toml(text).unwrap()
}

#[test]
fn default_runbook_resolves_with_correct_live_sets() {
    let steps = Runbook::default_mutations().resolve(1000).unwrap();
    let kinds: Vec<_> = steps.iter().map(|s| s.kind()).collect();
    assert_eq!(
        kinds,
        [
            "build", "search", "insert", "search", "update", "search", "delete", "search"
        ]
    );
    let live = |i: usize| match &steps[i] {
        Resolved::Search { live } => live.clone(),
        _ => panic!("step {i} is not a search"),
    };
    assert_eq!(live(1).len(), 900);
    assert_eq!(live(3).len(), 1000);
    // Update: ids 0..50 now carry rows 500..550.
    assert_eq!(live(5)[0], (0, 500));
    assert_eq!(live(5)[49], (49, 549));
    assert_eq!(live(5)[50], (50, 50));
    assert_eq!(live(7).len(), 950);
    if let Resolved::Delete { ids, .. } = &steps[6] {
        assert_eq!(ids.len(), 50);
        let deleted: std::collections::HashSet<_> = ids.iter().collect();
        assert!(live(7).iter().all(|(id, _)| !deleted.contains(id)));
    } else {
        panic!("step 6 is not a delete");
    }
}

#[test]
fn parses_toml_with_percentages_and_modes() {
    let rb = parse(
        r#"
        name = "t"
        [[steps]]
        kind = "build"
        end = "50%"
        [[steps]]
        kind = "insert"
        start = "50%"
        end = 80
        mode = "single"
        [[steps]]
        kind = "delete"
        ids = { start = 0, end = 10 }
        [[steps]]
        kind = "search"
        "#,
    );
    let steps = rb.resolve(100).unwrap();
    assert!(
        matches!(&steps[1], Resolved::Insert { ids, mode: OpMode::Single, .. } if ids.len() == 30)
    );
    assert!(matches!(&steps[3], Resolved::Search { live } if live.len() == 70));
    assert!(rb.mutates());
    assert!(!Runbook::build_and_search().mutates());
    assert_ne!(rb.hash(), Runbook::default_mutations().hash());
}

fn resolve_err(text: &str, n: usize) -> String {
    parse(text).resolve(n).unwrap_err().to_string()
}

#[test]
fn bad_runbooks_are_rejected_clearly() {
    let overlap = r#"
        [[steps]]
        kind = "build"
        end = 60
        [[steps]]
        kind = "insert"
        start = 50
        end = 70
    "#;
    let e = resolve_err(overlap, 100);
    assert!(
        e.contains("step 2 (insert)") && e.contains("overlaps"),
        "{e}"
    );

    let dead = r#"
        [[steps]]
        kind = "build"
        end = 10
        [[steps]]
        kind = "delete"
        ids = { start = 5, end = 20 }
    "#;
    let e = resolve_err(dead, 100);
    assert!(e.contains("id 10 is not live"), "{e}");

    let beyond = r#"
        [[steps]]
        kind = "build"
        end = 200
    "#;
    let e = resolve_err(beyond, 100);
    assert!(e.contains("beyond the dataset"), "{e}");

    let unknown = "[[steps]]\nkind = \"compact\"\n";
    let e = Runbook::parse_toml(unknown).unwrap_err().to_string();
    assert!(e.contains("compact"), "{e}");

    let no_build = "[[steps]]\nkind = \"search\"\n";
    let e = resolve_err(no_build, 10);
    assert!(e.contains("first step must be a build"), "{e}");

    let bad_pct = "[[steps]]\nkind = \"build\"\nend = \"lots\"\n";
    let e = resolve_err(bad_pct, 10);
    assert!(e.contains("lots"), "{e}");

    let double_delete = r#"
        [[steps]]
        kind = "build"
        end = 10
        [[steps]]
        kind = "delete"
        ids = { start = 0, end = 5 }
        [[steps]]
        kind = "update"
        ids = { start = 3, end = 6 }
        from = 0
    "#;
    let e = resolve_err(double_delete, 10);
    assert!(
        e.contains("step 3 (update)") && e.contains("id 3 is not live"),
        "{e}"
    );
}

/// Expiry: every inserted point's delete is issued its lifetime in writes after the insert
/// (a lifetime in seconds is rate × seconds writes), lifetimes go to the inserts in turn,
/// `never` points stay, and expiries due after the last planned write are not issued.
#[test]
fn expiring_inserts_are_deleted_their_lifetime_later() {
    let rb = parse(
        r#"
        [[steps]]
        kind = "build"
        end = 10
        [[steps]]
        kind = "stream"
        insert = { start = 10, end = 110, expire_after = ["0.01s", 7, "never"] }
        rate = 1000
        [[steps]]
        kind = "search"
        "#,
    );
    let steps = rb.resolve(200).unwrap();
    let Resolved::Stream(stream) = &steps[1] else {
        panic!("step 2 is not a stream");
    };
    let position = |id: PointId, delete: bool| {
        stream
            .ops
            .iter()
            .position(|op| op.id == id && op.row.is_none() == delete)
    };
    // Insert j (id 10 + j) gets lifetime j % 3: 10 writes, 7 writes, never.
    for j in 0..100u64 {
        let id = 10 + j;
        let put = position(id, false).unwrap();
        match (j % 3, position(id, true)) {
            (2, gone) => assert_eq!(gone, None, "id {id} never expires"),
            (0, Some(gone)) => assert!(gone >= put + 10 && gone <= put + 12, "{id}: {put} {gone}"),
            (1, Some(gone)) => assert!(gone >= put + 7 && gone <= put + 9, "{id}: {put} {gone}"),
            (_, None) => assert!(j >= 90, "id {id} (insert {j}) should have expired"),
            (_, Some(_)) => unreachable!(),
        }
    }
    let Resolved::Search { live } = &steps[2] else {
        panic!("step 3 is not a search");
    };
    let expired = stream.ops.iter().filter(|op| op.row.is_none()).count();
    assert_eq!(live.len(), 110 - expired);
    // Seconds without a rate: refused, saying why.
    let message = resolve_err(
        r#"
        [[steps]]
        kind = "build"
        end = 10
        [[steps]]
        kind = "stream"
        insert = { start = 10, end = 20, expire_after = "2s" }
        "#,
        100,
    );
    assert!(message.contains("needs the step's `rate`"), "{message}");
}

/// A runbook saved with a UTF-8 byte-order mark, TOML or big-ann YAML, is the runbook without
/// it; one in UTF-16 is refused, naming the file and the encoding.
#[test]
fn a_byte_order_mark_changes_no_runbook() {
    let dir = tempfile::tempdir().unwrap();
    let toml =
        "name = \"x\"\n[[steps]]\nkind = \"build\"\nend = \"50%\"\n[[steps]]\nkind = \"search\"\n";
    let yaml = "set:\n  1:\n    operation: insert\n    start: 0\n    end: 10\n  2:\n    operation: search\n";
    for (name, text) in [("rb.toml", toml), ("rb.yaml", yaml)] {
        let plain = dir.path().join(name);
        let marked = dir.path().join(format!("bom-{name}"));
        std::fs::write(&plain, text).unwrap();
        std::fs::write(&marked, [crate::text::UTF8_BOM, text.as_bytes()].concat()).unwrap();
        let (a, b) = (
            Runbook::load(&plain).unwrap(),
            Runbook::load(&marked).unwrap(),
        );
        assert_eq!(
            (a.steps.len(), a.hash()),
            (b.steps.len(), b.hash()),
            "{name}"
        );
        assert_eq!(a.steps.len(), 2, "{name}");
        let utf16: Vec<u8> = format!("\u{feff}{text}")
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        std::fs::write(&marked, utf16).unwrap();
        let err = Runbook::load(&marked).unwrap_err().to_string();
        assert!(
            err.ends_with(&format!("bom-{name}: UTF-16 LE text; save it as UTF-8")),
            "{err}"
        );
    }
}
