//! Unit tests of the parent module.

use super::*;

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
